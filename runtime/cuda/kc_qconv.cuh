/* kc_qconv.cuh: the int8 kernels of the quantize pass (passes/quantize.c) on the GPU:
 * QConv and QGemm as an implicit GEMM on int8 tensor cores (mma.sync m16n8k32, uint8
 * activations x int8 weights -> int32; wgmma m64nNk32 where the code is sm_90a's), depthwise QConv, QMaxPool, QGlobalAveragePool, QAdd,
 * QMul, QLut, and per-tensor QuantizeLinear / DequantizeLinear between float32 and uint8.
 *
 * Exactness: every kernel computes the C target's integer formula (runtime/rt_qgemm.h,
 * rt_qconv.h, rt_cast.h), so a CUDA bundle writes the same uint8 bytes as the C bundle:
 *   acc = bias[n] + sum_k x[k] * w[n][k]                 (int32; padding taps read x_zp)
 *   t   = acc * mult[n] + (r - r_zp) * rmult[n]          (int64; residual term with r only)
 *   y   = clamp(y_zp + floor((t + 2^(shift[n]-1)) / 2^shift[n]), lo, hi)
 * The per-channel parameters are one int32 array of 4 M values made at compile time by the
 * CUDA target's prepare step (backend/cuda/cuda_qint8.c): bias, mult, rmult, shift.
 *
 * Weights: dense QConv/QGemm (M, Kp) int8, row n holding k = (ky*KW + kx)*C + c, zero
 * past K = KH*KW*C up to Kp, a multiple of KC_QBK; depthwise (KH*KW, C). */
#ifndef KILN_KC_QCONV_CUH
#define KILN_KC_QCONV_CUH

#include "kc_common.cuh"
#include "kc_igemm.cuh" /* the wgmma form: kc_igemm_wg_kernel's helpers */

#define KC_QBM 128 /* output pixels per block */
#define KC_QBK 64  /* reduction bytes per stage */
#define KC_QLD 80  /* shared-memory row stride in bytes: conflict-free fragment loads */
#define KC_QKTAB 512 /* reduction positions of the table gather (VW 0): 4 KB of shared memory */

/* Programmatic dependent launch (kc_common.cuh) for every kernel here: launched by kc_qlaunch,
 * a kernel stages its weights and requantization table, which no kernel writes, while the
 * kernel before it drains, then kc_pdl_sync before it reads an activation or writes
 * anything. KC_QPDL 0: plain launches (an A/B knob; the waits are then no-ops). */
#ifndef KC_QPDL
#define KC_QPDL 1
#endif
#define kc_qlaunch kc_launch_as<KC_QPDL != 0>

typedef struct KcQConv {
    int32_t N, H, W, C;   /* input (N,H,W,C) uint8 */
    int32_t OH, OW, M;    /* output (N,OH,OW,M) */
    int32_t R, S, sh, sw, ph, pw, dh, dw;
    int32_t K, Kp;        /* reduction R*S*C, padded */
    int32_t x_zp, y_zp, r_zp, lo, hi;
} KcQConv;

/* floor(t / 2^s + 1/2), 1 <= s <= 62: rt_qround_shift */
static __device__ __forceinline__ int64_t kc_qround_shift(int64_t t, int s) {
    int64_t u = t + ((int64_t)1 << (s - 1));
    return u >= 0 ? u >> s : -((-u - 1) >> s) - 1;
}

/* rt_qrequant1: acc holds the bias; r is the residual minus its zero point */
static __device__ __forceinline__ uint8_t kc_qrequant(int32_t acc, int32_t mult, int32_t rmult,
                                                      int32_t r, int shift, int32_t y_zp,
                                                      int32_t lo, int32_t hi) {
    int64_t t = (int64_t)acc * mult + (int64_t)r * rmult;
    int64_t v = kc_qround_shift(t, shift) + y_zp;
    v = v > lo ? v : lo; /* min(max(v, lo), hi), as rt_qrequant1 */
    return (uint8_t)(v < hi ? v : hi);
}

/* a * b + c in one 32 x 32 -> 64-bit multiply-add (IMAD.WIDE): NVVM keeps a multiplier
 * hoisted as int64 and multiplies in 64 x 64 bits otherwise */
static __host__ __device__ __forceinline__ int64_t kc_qmadw(int32_t a, int32_t b, int64_t c) {
#ifdef __CUDA_ARCH__
    int64_t d;
    asm("mad.wide.s32 %0, %1, %2, %3;" : "=l"(d) : "r"(a), "r"(b), "l"(c));
    return d;
#else /* the host's copy: tests/cuda/qconv_gpu.cu checks kc_qhi_terms' bounds with it */
    return (int64_t)a * b + c;
#endif
}

/* The same result with the per-channel terms folded ahead, for the QConv epilogues: acc
 * already holds the bias, k0 = 2^(shift-1) - r_zp * rmult (the rounding and the residual's
 * zero point), r the raw residual byte, and the clamp taken before adding y_zp (l = lo -
 * y_zp, h = hi - y_zp): clamp(y_zp + q, lo, hi) = y_zp + clamp(q, l, h). Only the sums'
 * grouping changes, in int64 without overflow: the same bytes as kc_qrequant. The floor is
 * t >> shift itself: nvcc shifts signed integers arithmetically (shr.s64), so the two-sided
 * form of kc_qround_shift is not needed here. Most channels take kc_qrequant_hi instead. */
template <bool RES = true>
static __device__ __forceinline__ int32_t kc_qrequant_k(int32_t acc, int32_t mult, int64_t k0,
                                                        int32_t r, int32_t rmult, int shift,
                                                        int32_t l, int32_t h) {
    int64_t t = kc_qmadw(acc, mult, k0);
    if (RES) t = kc_qmadw(r, rmult, t);
    int64_t q = t >> shift; /* floor(t / 2^shift) */
    q = q > l ? q : l;
    return (int32_t)(q < h ? q : h);
}

/* kc_qrequant_k when floor(t / 2^shift) is the high word of t, floor(t / 2^32), shifted by s32
 * more (two floors compose): always within 32 bits, so the shift and the clamp are 32-bit
 * where kc_qrequant_k shifts and compares in 64 bits (see kc_qhi_terms for the shifts below
 * 32). rk scales the residual byte (r << rk). k0 also holds y_zp 2^shift (kc_qhi_terms), so
 * the floor is y_zp + q and the clamp is to lo..hi itself: the result is the output byte.
 * S0: s32 is 0 (every residual layer of ResNet-50). With kc_qmadw, H200 ResNet-50 batch 256:
 * 10.90 -> 10.69 ms, layer1 conv3 0.408 -> 0.381 ms. */
template <bool RES, bool S0 = false, bool CLAMP = true>
static __host__ __device__ __forceinline__ int32_t kc_qrequant_hi(int32_t acc, int32_t mult, int64_t k0,
                                                         int32_t r, int32_t rmult, int rk,
                                                         int s32, int32_t lo, int32_t hi) {
    int32_t q;
#ifdef __CUDA_ARCH__
    /* the sums as 32-bit multiply-adds with carries: ptxas makes one IMAD.WIDE with a 64-bit
     * addend and one IMAD.HI of them (FMA pipe), where kc_qmadw's mad.wide took IMAD.WIDE,
     * IADD3 and IADD3.X (the adds on the ALU pipe) */
    const uint32_t k0l = (uint32_t)(uint64_t)k0, k0h = (uint32_t)((uint64_t)k0 >> 32);
    if (RES)
        asm("{\n\t.reg .u32 lo, hi;\n\t"
            "mad.lo.cc.u32 lo, %1, %2, %3;\n\t"
            "madc.hi.s32 hi, %1, %2, %4;\n\t"
            "mad.lo.cc.u32 lo, %5, %6, lo;\n\t"
            "madc.hi.s32 %0, %5, %6, hi;\n\t}"
            : "=r"(q) : "r"(acc), "r"(mult), "r"(k0l), "r"(k0h), "r"(r << rk), "r"(rmult));
    else
        asm("{\n\t.reg .u32 lo;\n\t"
            "mad.lo.cc.u32 lo, %1, %2, %3;\n\t"
            "madc.hi.s32 %0, %1, %2, %4;\n\t}"
            : "=r"(q) : "r"(acc), "r"(mult), "r"(k0l), "r"(k0h));
#else
    int64_t t = kc_qmadw(acc, mult, k0);
    if (RES) t = kc_qmadw(r << rk, rmult, t);
    q = (int32_t)(t >> 32);
#endif
    if (!S0) q >>= s32;
    if (!CLAMP) return q; /* the caller clamps (kc_qclamp_pack2) */
    q = q > lo ? q : lo; /* min(max(q, lo), hi), as rt_qrequant1: two VIMNMX where the nested
                          * select (lo first) took three */
    return q < hi ? q : hi;
}

/* The terms of kc_qrequant_hi for a channel of kc_qrequant_k's (mult, k0, shift), or false.
 * shift >= 32 (the usual case without a residual: qplan_multiplier gives a multiplier m below
 * 1/2 a shift of 31 - e >= 32, m in [2^(e-1), 2^e)): s32 = shift - 32. With a residual the
 * shift is capped by the residual's multiplier (ResNet-50: 30 or 31 on every such layer);
 * there t 2^j with j = 32 - shift has the same floor at 2^32, and for 16 <= shift < 32 and
 * |mult| < 2^(shift-1) it is exact in the same instructions: mult 2^j within int32, k0 2^j,
 * the residual byte r 2^j (under 2^24; rmult itself stays), |t 2^j| < 2^62 + 2^57. The output
 * zero point joins k0 as y_zp 2^shift (2^j: y_zp 2^32), which adds y_zp to the floor exactly;
 * with |y_zp| <= 256 and shift <= 52 the sum stays within int64: |acc mult| <= 2^62, |k0| <
 * 2^51 + 2^39, |r rmult| < 2^39, |y_zp 2^shift| <= 2^60 (scaled form: 2^62 + 2^57 + 2^40). */
static __host__ __device__ __forceinline__ bool kc_qhi_terms(int32_t &mult, int64_t &k0, int &rk, int &s32,
                                                    int shift, int32_t y_zp) {
    if (y_zp < -256 || y_zp > 256 || shift > 52) return false;
    if (shift >= 32) {
        rk = 0, s32 = shift - 32;
        k0 = (int64_t)((uint64_t)k0 + ((uint64_t)(int64_t)y_zp << shift));
        return true;
    }
    if (shift < 16 || mult < -(1 << (shift - 1)) || mult >= 1 << (shift - 1)) return false;
    rk = 32 - shift, s32 = 0;
    /* in uint64: where k0 also holds the bias (kc_q1tab_make), the terms are right modulo 2^64
     * and the sum t they make is the true one, within int64 as above */
    mult *= 1 << rk, k0 = (int64_t)(((uint64_t)k0 << rk) + ((uint64_t)(int64_t)y_zp << 32));
    return true;
}

/* k0 of kc_qrequant_k for channel n of the (4, M) table rq */
static __device__ __forceinline__ int64_t kc_qk0(const int32_t *rq, int M, int n, int32_t r_zp) {
    return ((int64_t)1 << (rq[3 * M + n] - 1)) - (int64_t)r_zp * rq[2 * M + n];
}

/* The accumulators of a warp's 64 x 32 tile from channel c0 on start at the bias (the
 * epilogues add none); channels past M at 0. ADD: the bias added to them instead. */
template <bool ADD = false>
static __device__ __forceinline__ void kc_qacc_bias(int32_t (&acc)[4][4][4], const int32_t *bias,
                                                    int M, int c0, int tig) {
#pragma unroll
    for (int nt = 0; nt < 4; nt++)
#pragma unroll
        for (int j = 0; j < 2; j++) {
            int n = c0 + nt * 8 + tig * 2 + j;
            int32_t b = n < M ? bias[n] : 0;
#pragma unroll
            for (int mt = 0; mt < 4; mt++) {
                acc[mt][nt][j] = (ADD ? acc[mt][nt][j] : 0) + b;
                acc[mt][nt][2 + j] = (ADD ? acc[mt][nt][2 + j] : 0) + b;
            }
        }
}

/* The QConv kernels' epilogue: a warp's 64 x 32 tile of int32 sums (acc[mt][nt], the
 * mma.sync m16n8 fragment layout: rows g and g + 8, columns 2 tig and 2 tig + 1 of each
 * 16 x 8 block, the bias already in) from pixel r0 and channel c0 on: residual,
 * requantization and clamp, one store of uint8 each. rq: bias, multiplier, residual multiplier and shift per channel. */
static __device__ __forceinline__ void kc_qconv_epilogue(const int32_t (&acc)[4][4][4],
                                                         const int32_t *__restrict__ rq,
                                                         const uint8_t *__restrict__ res,
                                                         uint8_t *__restrict__ y,
                                                         const KcQConv &p, int P, int r0,
                                                         int c0, int g, int tig) {
    const int32_t *mult = rq + p.M, *rmult = rq + 2 * p.M, *shift = rq + 3 * p.M;
    const int32_t l = p.lo - p.y_zp, hh = p.hi - p.y_zp;
#pragma unroll
    for (int nt = 0; nt < 4; nt++) {
#pragma unroll
        for (int j = 0; j < 2; j++) {
            int n = c0 + nt * 8 + tig * 2 + j;
            if (n >= p.M) continue;
            int32_t m = mult[n], rm = res ? rmult[n] : 0, sh = shift[n];
            int64_t k0 = kc_qk0(rq, p.M, n, res ? p.r_zp : 0);
#pragma unroll
            for (int mt = 0; mt < 4; mt++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    int pix = r0 + mt * 16 + g + 8 * h;
                    if (pix >= P) continue;
                    size_t o = (size_t)pix * p.M + n;
                    int32_t r = res ? (int32_t)res[o] : 0;
                    y[o] = (uint8_t)(p.y_zp + kc_qrequant_k(acc[mt][nt][2 * h + j], m, k0, r, rm, sh, l, hh));
                }
        }
    }
}

/* KC_QEPI_LAB, timing only (bench/gpu/int8_gemm_lab.cu; wrong bytes): 1 the shared-memory
 * epilogue's requantization replaced by a plain cast, 2 its tile not stored, 3 both */
#ifndef KC_QEPI_LAB
#define KC_QEPI_LAB 0
#endif

/* clamp(v0, lo, hi) | clamp(v1, lo, hi) << 8 for 0 <= lo, hi <= 255 (qplan's bounds): a
 * saturating pack to two u16 lanes (0..65535, so the clamp to lo..hi after it is the same),
 * max and min on both lanes at once (sm_90's 16x2 integer forms), the low bytes of the lanes
 * gathered: four instructions a pair where two clamps (four VIMNMX) and a permute took five.
 * Older targets: the clamps one value at a time. */
#ifndef KC_QPLAIN
#define KC_QPLAIN 1 /* 0: no plain forms (kc_q1tab_make's bit 4; an A/B knob) */
#endif
static __device__ __forceinline__ uint16_t kc_qclamp_pack2(int32_t v0, int32_t v1, int32_t lo, int32_t hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    uint32_t d;
    asm("cvt.pack.sat.u16.s32 %0, %1, %2;" : "=r"(d) : "r"(v1), "r"(v0)); /* v1 high, v0 low */
    asm("max.u16x2 %0, %0, %1;" : "+r"(d) : "r"((uint32_t)lo * 0x10001u));
    asm("min.u16x2 %0, %0, %1;" : "+r"(d) : "r"((uint32_t)hi * 0x10001u));
    return (uint16_t)__byte_perm(d, 0, 0x0020);
#else
    v0 = v0 > lo ? v0 : lo, v1 = v1 > lo ? v1 : lo;
    v0 = v0 < hi ? v0 : hi, v1 = v1 < hi ? v1 : hi;
    return (uint16_t)__byte_perm((uint32_t)v0, (uint32_t)v1, 0x0040);
#endif
}

/* clamp(v0, 0, 255) | clamp(v1, 0, 255) << 8: one saturating pack (the plain forms: lo 0,
 * hi 255, where kc_qclamp_pack2 takes four instructions) */
static __device__ __forceinline__ uint16_t kc_qsat_pack2(int32_t v0, int32_t v1) {
    uint32_t d;
    asm("cvt.pack.sat.u8.s32.b32 %0, %1, %2, 0;" : "=r"(d) : "r"(v1), "r"(v0)); /* v1 high, v0 low */
    return (uint16_t)d;
}

/* The requantization terms of one thread's channel pair (n, n + 1) in kc_qconv_epilogue16;
 * pw: 2^rk of kc_qhi_terms, the residual byte's scale as a multiplier (an IMAD on the FMA
 * pipe where r << rk was a shift on the ALU pipe, which the epilogue's other steps fill) */
typedef struct KcQPair {
    int32_t m[2], rm[2], s[2], pw[2], l, h, y_zp;
    int64_t k0[2];
} KcQPair;

/* The pair's 2 x 2 values v of one 16 x 8 accumulator block (v[0], v[1]: row g, v[2], v[3]:
 * row g + 8) in place in the shared tile (e: row g, the pair's column), residual bytes read
 * from there first (RES). FORM 0: c holds kc_qrequant_k's terms (the clamp to l..h, then +
 * y_zp); 1: kc_qhi_terms' terms for both channels (kc_qrequant_hi, c.l and c.h the output's lo
 * and hi); 2: the same with s32 0; FORM | 4 (5, 6): 1 or 2 where the output's lo and hi are 0
 * and 255, the clamp a saturating pack alone (KC_QPLAIN). */
template <bool RES, int FORM, int LD>
static __device__ __forceinline__ void kc_qepi_quad(const int32_t *v, const KcQPair &c, uint8_t *e) {
#pragma unroll
    for (int h = 0; h < 2; h++) {
        uint16_t *q = (uint16_t *)(void *)(e + 8 * h * LD);
        int32_t r0 = 0, r1 = 0;
        if (RES) {
            uint32_t rr = *q;
            r0 = (int32_t)(rr & 0xff), r1 = (int32_t)(rr >> 8);
            if (FORM) r0 *= c.pw[0], r1 *= c.pw[1];
        }
        int32_t v0, v1;
        if (KC_QEPI_LAB & 1) { /* timing only: a plain cast, the residual still read */
            v0 = v[2 * h] + r0, v1 = v[2 * h + 1] + r1;
            *q = (uint16_t)((v0 & 255) | (v1 << 8));
            continue;
        }
        if (FORM) {
            const int32_t q0 = kc_qrequant_hi<RES, (FORM & 3) == 2, false>(v[2 * h], c.m[0], c.k0[0], r0, c.rm[0], 0, c.s[0], 0, 0);
            const int32_t q1 = kc_qrequant_hi<RES, (FORM & 3) == 2, false>(v[2 * h + 1], c.m[1], c.k0[1], r1, c.rm[1], 0, c.s[1], 0, 0);
            *q = FORM & 4 ? kc_qsat_pack2(q0, q1) : kc_qclamp_pack2(q0, q1, c.l, c.h);
            continue;
        }
        v0 = c.y_zp + kc_qrequant_k<RES>(v[2 * h], c.m[0], c.k0[0], r0, c.rm[0], c.s[0], c.l, c.h);
        v1 = c.y_zp + kc_qrequant_k<RES>(v[2 * h + 1], c.m[1], c.k0[1], r1, c.rm[1], c.s[1], c.l, c.h);
        /* both in 0..255: one byte permute packs them */
        *q = (uint16_t)__byte_perm((uint32_t)v0, (uint32_t)v1, 0x0040);
    }
}

/* The pair's 8 x 2 values of acc[.][nt] (a warp's 64 rows: four blocks of 16) by
 * kc_qepi_quad, e at row g of the warp's 64 */
template <bool RES, int FORM, int LD, int MT = 4>
static __device__ __forceinline__ void kc_qepi_pair(const int32_t (&acc)[MT][4][4], int nt,
                                                    const KcQPair &c, uint8_t *e) {
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
        kc_qepi_quad<RES, FORM, LD>(acc[mt][nt], c, e + mt * 16 * LD);
}

/* The same epilogue through shared memory, for M % 16 == 0 with y (and the residual) on 16
 * bytes: the block's 128 x BN residual tile comes in as 16-byte row chunks, each thread
 * requantizes its fragment values in place (two channels, one 2-byte store), and the uint8
 * tile goes out as 16-byte row chunks -- whole 32-byte sectors, where the fragment layout
 * stores 8 rows x 4 bytes a warp instruction. Row stride BN + 16: the fragment stores of a
 * warp (8 rows x 8 bytes) fall in distinct banks. ys: 128 x (BN + 16) bytes that no thread
 * still reads (the caller synchronizes after its main loop). PRE: ys holds the residual tile
 * already (kc_qconv1x1_kernel's cp.async), visible to every thread. */
#define KC_QYLD(BN) ((BN) + 16)

/* The requantized BM x BN tile ys out to y as 16-byte row chunks (after a barrier); a block
 * of BM / 64 x BN / 32 warps. A thread keeps one chunk column and steps rows by THREADS / CH
 * (a fixed trip count: the loop over threadIdx.x that this replaces ran 25 instructions a
 * chunk on its divisions and 64-bit addresses; now about 4 on a whole tile). */
template <int BN, int BM = KC_QBM, int THREADS = BM * BN / 64>
static __device__ __forceinline__ void kc_qepi16_store(uint8_t *__restrict__ y, const KcQConv &p, int P,
                                                       int row0, int col0, const uint8_t *ys) {
    enum { LD = KC_QYLD(BN), CH = BN / 16, RSTEP = THREADS / CH, IT = BM / RSTEP };
    static_assert(THREADS % CH == 0 && BM % RSTEP == 0, "whole rows of chunks a pass");
    const int r = threadIdx.x / CH, q = threadIdx.x % CH, n = col0 + q * 16;
    const uint8_t *s = ys + r * LD + q * 16;
    uint8_t *d = y + (size_t)(row0 + r) * p.M + n;
    const size_t step = (size_t)RSTEP * p.M;
    if (KC_QEPI_LAB & 2 && p.lo <= 255) return;
    if (row0 + BM <= P && col0 + BN <= p.M) {
#pragma unroll
        for (int i = 0; i < IT; i++)
            *(uint4 *)(void *)(d + step * i) = *(const uint4 *)(const void *)(s + RSTEP * i * LD);
    } else if (n < p.M) {
#pragma unroll
        for (int i = 0; i < IT; i++)
            if (row0 + r + RSTEP * i < P)
                *(uint4 *)(void *)(d + step * i) = *(const uint4 *)(const void *)(s + RSTEP * i * LD);
    }
}

template <int BN, bool PRE = false, int BM = KC_QBM>
static __device__ __forceinline__ void kc_qconv_epilogue16(const int32_t (&acc)[4][4][4],
                                                           const int32_t *__restrict__ rq,
                                                           const uint8_t *__restrict__ res,
                                                           uint8_t *__restrict__ y,
                                                           const KcQConv &p, int P, int row0,
                                                           int col0, uint8_t *ys) {
    enum { LD = KC_QYLD(BN), CH = BN / 16, THREADS = BM * BN / 64, WMS = BM / 64 };
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, tig = lane & 3, wm = warp % WMS, wn = warp / WMS;
    if (res && !PRE) { /* PRE: the caller brought the residual tile into ys already */
#pragma unroll
        for (int i = tid; i < BM * CH; i += THREADS) {
            int r = i / CH, q = i % CH, pix = row0 + r, n = col0 + q * 16;
            if (pix < P && n < p.M)
                *(uint4 *)(void *)(ys + r * LD + q * 16) =
                    *(const uint4 *)(const void *)(res + (size_t)pix * p.M + n);
        }
        __syncthreads();
    }
    const int32_t *mult = rq + p.M, *rmult = rq + 2 * p.M, *shift = rq + 3 * p.M;
    const int32_t l = p.lo - p.y_zp, hh = p.hi - p.y_zp;
#pragma unroll
    for (int nt = 0; nt < 4; nt++) {
        const int cl = wn * 32 + nt * 8 + tig * 2, n = col0 + cl;
        if (n >= p.M) continue; /* the pair lies in one 16-channel chunk: both or neither */
        KcQPair c;
        c.m[0] = mult[n], c.m[1] = mult[n + 1], c.s[0] = shift[n], c.s[1] = shift[n + 1];
        c.rm[0] = res ? rmult[n] : 0, c.rm[1] = res ? rmult[n + 1] : 0;
        c.k0[0] = kc_qk0(rq, p.M, n, res ? p.r_zp : 0), c.k0[1] = kc_qk0(rq, p.M, n + 1, res ? p.r_zp : 0);
        c.pw[0] = c.pw[1] = 1, c.l = l, c.h = hh, c.y_zp = p.y_zp;
        uint8_t *e = ys + (wm * 64 + g) * LD + cl;
        /* one form for the whole loop (a uniform branch where a warp's channels agree) */
        KcQPair hi = c;
        hi.l = p.lo, hi.h = p.hi;
        int rk[2];
        if (kc_qhi_terms(hi.m[0], hi.k0[0], rk[0], hi.s[0], c.s[0], p.y_zp) &&
            kc_qhi_terms(hi.m[1], hi.k0[1], rk[1], hi.s[1], c.s[1], p.y_zp)) {
            hi.pw[0] = 1 << rk[0], hi.pw[1] = 1 << rk[1];
            /* no s32-0 form here (FORM 2): a fifth unrolled copy cost the tiled kernels more
             * than it saved (H200 ResNet-50 batch 256: the stem 0.813 -> 0.847 ms with it) */
            if (res) kc_qepi_pair<true, 1, LD>(acc, nt, hi, e);
            else kc_qepi_pair<false, 1, LD>(acc, nt, hi, e);
        } else {
            if (res) kc_qepi_pair<true, 0, LD>(acc, nt, c, e);
            else kc_qepi_pair<false, 0, LD>(acc, nt, c, e);
        }
    }
    __syncthreads();
    kc_qepi16_store<BN, BM>(y, p, P, row0, col0, ys);
}

/* Whether the shared-memory epilogue applies (the same answer in every block). */
static __device__ __forceinline__ bool kc_qepi16(const KcQConv &p, const uint8_t *y, const uint8_t *res) {
    return p.M % 16 == 0 && ((uintptr_t)y & 15) == 0 && ((uintptr_t)res & 15) == 0;
}

/* Four 8 x 16-byte matrices from shared memory (ldmatrix .b16): lane l gives the address
 * of row l % 8 of matrix l / 8 and receives 4 bytes of row l / 4 of each, bytes 4 (l % 4)
 * on: the m16n8k32 int8 fragment layout. */
static __device__ __forceinline__ void kc_ldsm4(uint32_t *r, const void *smem) {
    unsigned a = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

/* The warp's A (16 MT x 32 bytes: 64 rows by default) and B (32 x 32 bytes) fragments of one
 * 32-byte reduction step from row-major shared tiles of stride LD (conflict-free for LD 48 and
 * 80): MT ldmatrix.x4 for A (one per 16 rows), two for B (one per 16 channels). */
template <int LD, int MT = 4>
static __device__ __forceinline__ void kc_qfrags(uint32_t (&af)[MT][4], uint32_t (&bf)[4][2],
                                                 const uint8_t *a, const uint8_t *b, int lane) {
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
        kc_ldsm4(af[mt], a + (mt * 16 + (lane & 15)) * LD + (lane >> 4) * 16);
#pragma unroll
    for (int i = 0; i < 2; i++) {
        uint32_t r[4];
        kc_ldsm4(r, b + (i * 16 + (lane >> 4) * 8 + (lane & 7)) * LD + ((lane >> 3) & 1) * 16);
        bf[2 * i][0] = r[0], bf[2 * i][1] = r[1], bf[2 * i + 1][0] = r[2], bf[2 * i + 1][1] = r[3];
    }
}

/* VW bytes of x for reduction index k of pixel (n, oy, ox) (k, VW in one tap: C % VW == 0) */
template <int VW>
static __device__ __forceinline__ void kc_qgather(const uint8_t *__restrict__ x, const KcQConv &p,
                                                  int n, int oy, int ox, int k, uint8_t *dst) {
    if (n < 0 || k >= p.K) {
#pragma unroll
        for (int i = 0; i < VW; i++) dst[i] = 0;
        return;
    }
    int tap = k / p.C, c = k - tap * p.C, ky = tap / p.S, kx = tap - ky * p.S;
    int iy = oy * p.sh - p.ph + ky * p.dh, ix = ox * p.sw - p.pw + kx * p.dw;
    if (iy < 0 || iy >= p.H || ix < 0 || ix >= p.W) {
#pragma unroll
        for (int i = 0; i < VW; i++) dst[i] = (uint8_t)p.x_zp;
        return;
    }
    const uint8_t *src = x + ((size_t)((n * p.H + iy) * p.W + ix)) * p.C + c;
    if (VW == 16) *(uint4 *)(void *)dst = *(const uint4 *)(const void *)src;
    else if (VW == 4) *(uint32_t *)(void *)dst = *(const uint32_t *)(const void *)src;
    else dst[0] = src[0];
}

/* The float32 NCHW graph input of a stem whose QuantizeLinear and Transpose into NHWC the
 * kernel does in its gather (VW -1; backend/cuda/cuda_qint8.c folds them): x itself and
 * QuantizeLinear's scale and zero point (NULL: 0), the zero point the layer's x_zp. */
typedef struct KcQF32In {
    const float *x, *scale;
    const uint8_t *zp;
} KcQF32In;

/* QuantizeLinear of one float32 to uint8 as the C runtime does it (rt_quantize_f32_8bit and
 * kc_quantize_u8: rint of the quotient in double, round half to even, plus z, saturated),
 * without the double division where it cannot change the byte: q = v * inv (inv = 1/s in
 * float32, rel = 2^-20 where inv is normal and finite, else infinity) is within |q| 2^-22 of
 * Q = v / s; where q is farther than |q| 2^-20 from the nearest half-integer, Q lies between
 * the same two half-integers, so rint(q) is Q's nearest integer, which the double quotient
 * also rounds to (a quotient of two floats that is not a tie is at least 2^-25 from one, far
 * beyond the double's error below 2^20). Ties, |q| >= 2^20, NaN and infinities take the
 * double division (about 1 value in 2000 on an image). */
static __host__ __device__ __forceinline__ uint32_t kc_qquant_f32(float v, float inv, float rel,
                                                                  double s, float z) {
#ifdef __CUDA_ARCH__
    float q = __fmul_rn(v, inv); /* not contracted into q - r below */
#else
    float q = v * inv;
#endif
    float r = rintf(q);
    if (fabsf(fabsf(q - r) - 0.5f) > fabsf(q) * rel) {
        float u = r + z;
        return (uint32_t)(u < 0.0f ? 0.0f : u > 255.0f ? 255.0f : u);
    }
    double d = rint((double)v / s) + (double)z;
    d = d < 0.0 ? 0.0 : d > 255.0 ? 255.0 : d;
    return (uint32_t)(int64_t)d;
}

/* kc_qquant_f32's inv and rel for scale s */
static __host__ __device__ __forceinline__ void kc_qquant_terms(float s, float &inv, float &rel) {
#ifdef __CUDA_ARCH__
    inv = __frcp_rn(s);
#else
    inv = 1.0f / s;
#endif
    rel = fabsf(inv) >= 1.17549435e-38f && fabsf(inv) <= 3.40282347e38f ? 0x1p-20f : INFINITY;
}

static __device__ __forceinline__ void kc_mma_u8s8(int32_t *d, const uint32_t *a, const uint32_t *b) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* y = requant(conv(x, w) + bias [+ residual]); one block: 128 pixels x BN channels (64 or
 * 128), BN/16 warps of 64 x 32, double-buffered shared memory filled through registers (padding taps
 * become x_zp, which cp.async's zero fill cannot give). VW: the gather's vector width
 * (16 when C % 16 == 0, 4 when C % 4 == 0, else 1), or 0: bytes through a table of the
 * reduction positions (KcQTap, made once per block), shared by the thread's rows -- no
 * division per byte (an RGB first layer: Kp <= KC_QKTAB). sm_80 and newer. */
template <int VW, int BN>
__global__ void __launch_bounds__(2 * BN)
kc_qconv_mma_kernel(const uint8_t *__restrict__ x, const int8_t *__restrict__ w,
                    const int32_t *__restrict__ rq, const uint8_t *__restrict__ res,
                    uint8_t *__restrict__ y, KcQConv p, KcQF32In fin) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    kc_pdl_sync();
    __shared__ __align__(16) uint8_t As[2][KC_QBM * KC_QLD];
    __shared__ __align__(16) uint8_t Bs[2][BN * KC_QLD];
    __shared__ int2 ktab[VW <= 0 ? KC_QKTAB : 1];
    enum { THREADS = 2 * BN, AP = KC_QBM * 4 / THREADS, RSTEP = THREADS / 4 };
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, tig = lane & 3, wm = warp & 1, wn = warp >> 1;
    const int P = p.N * p.OH * p.OW;
    const int row0 = blockIdx.x * KC_QBM, col0 = blockIdx.y * BN;
    const int cc = tid & 3; /* this thread's 16-byte chunk of a 64-byte row */
    int an[AP], ay[AP], ax[AP];
#pragma unroll
    for (int i = 0; i < AP; i++) {
        int pix = row0 + (tid >> 2) + RSTEP * i;
        if (pix < P) {
            int img = pix / (p.OH * p.OW), rem = pix - img * (p.OH * p.OW);
            an[i] = img, ay[i] = rem / p.OW, ax[i] = rem - ay[i] * p.OW;
        } else {
            an[i] = -1, ay[i] = 0, ax[i] = 0;
        }
    }
    /* VW 0: row i's first input position (iy0, ix0) and its byte offset; a row past the
     * last pixel starts far outside, so that every tap reads the zero point. VW -1: the
     * same over the float32 input in NCHW (offsets in elements, channel planes apart). */
    int iy0[AP], ix0[AP], xb[AP];
    if (VW <= 0) {
#pragma unroll
        for (int i = 0; i < AP; i++) {
            iy0[i] = an[i] < 0 ? -(1 << 20) : ay[i] * p.sh - p.ph;
            ix0[i] = ax[i] * p.sw - p.pw;
            xb[i] = an[i] < 0    ? 0
                    : VW == 0 ? ((an[i] * p.H + iy0[i]) * p.W + ix0[i]) * p.C
                              : (an[i] * p.C * p.H + iy0[i]) * p.W + ix0[i];
        }
        for (int k = tid; k < p.Kp; k += THREADS) {
            int tap = k / p.C, c = k - tap * p.C, ky = tap / p.S, kx = tap - ky * p.S;
            int dy = ky * p.dh, dx = kx * p.dw;
            int off = VW == 0 ? (dy * p.W + dx) * p.C + c : (c * p.H + dy) * p.W + dx;
            ktab[k] = k < p.K ? make_int2(off, dy << 16 | dx)
                              : make_int2(0, 0x4000 << 16); /* past K: w is 0 there */
        }
        __syncthreads();
    }
    const uint32_t zp = (uint32_t)p.x_zp;
    float qinv = 0.0f, qrel = 0.0f, qz = 0.0f; /* VW -1: kc_qquant_f32's terms */
    double qs = 1.0;
    if (VW < 0) {
        qs = (double)fin.scale[0], qz = fin.zp ? (float)fin.zp[0] : 0.0f;
        kc_qquant_terms(fin.scale[0], qinv, qrel);
    }
    uint4 ra[AP], rb[2];
    int32_t acc[4][4][4];
    /* from 0, the bias added after the main loop: held through this kernel's loop it costs
     * the RGB stem 37 registers (171 against 134) and 0.32 ms of 1.12 (H200, batch 256) */
#pragma unroll
    for (int q = 0; q < 64; q++) acc[q / 16][q / 4 % 4][q % 4] = 0;
    const int nk = p.Kp / KC_QBK;
    auto load = [&](int kt) {
        int k = kt * KC_QBK + cc * 16;
        if (VW <= 0) {
            int2 e[16];
#pragma unroll
            for (int v = 0; v < 16; v++) e[v] = ktab[k + v];
#pragma unroll
            for (int i = 0; i < AP; i++) {
                uint32_t wd[4] = {0, 0, 0, 0};
#pragma unroll
                for (int v = 0; v < 16; v++) {
                    unsigned iy = (unsigned)(iy0[i] + (e[v].y >> 16));
                    unsigned ix = (unsigned)(ix0[i] + (e[v].y & 0xffff));
                    bool in = iy < (unsigned)p.H && ix < (unsigned)p.W;
                    uint32_t b = !in      ? zp
                                 : VW == 0 ? x[xb[i] + e[v].x]
                                           : kc_qquant_f32(fin.x[xb[i] + e[v].x], qinv, qrel, qs, qz);
                    wd[v / 4] |= b << (8 * (v % 4));
                }
                ra[i] = make_uint4(wd[0], wd[1], wd[2], wd[3]);
            }
        } else {
#pragma unroll
            for (int i = 0; i < AP; i++) {
                uint8_t *d = (uint8_t *)&ra[i];
#pragma unroll
                for (int v = 0; v < 16; v += VW > 0 ? VW : 16) /* (VW <= 0: the branch above) */
                    kc_qgather<(VW > 0 ? VW : 1)>(x, p, an[i], ay[i], ax[i], k + v, d + v);
            }
        }
#pragma unroll
        for (int i = 0; i < 2; i++) {
            int n = col0 + (tid >> 2) + RSTEP * i;
            rb[i] = n < p.M ? *(const uint4 *)(const void *)(w + (size_t)n * p.Kp + k)
                            : make_uint4(0, 0, 0, 0);
        }
    };
    auto store = [&](int buf) {
#pragma unroll
        for (int i = 0; i < AP; i++)
            *(uint4 *)(void *)&As[buf][((tid >> 2) + RSTEP * i) * KC_QLD + cc * 16] = ra[i];
#pragma unroll
        for (int i = 0; i < 2; i++)
            *(uint4 *)(void *)&Bs[buf][((tid >> 2) + RSTEP * i) * KC_QLD + cc * 16] = rb[i];
    };
    load(0);
    store(0);
    __syncthreads();
    for (int kt = 0; kt < nk; kt++) {
        const int buf = kt & 1;
        if (kt + 1 < nk) load(kt + 1);
#pragma unroll
        for (int ks = 0; ks < KC_QBK; ks += 32) {
            uint32_t af[4][4], bf[4][2];
            kc_qfrags<KC_QLD>(af, bf, &As[buf][wm * 64 * KC_QLD + ks], &Bs[buf][wn * 32 * KC_QLD + ks], lane);
#pragma unroll
            for (int mt = 0; mt < 4; mt++)
#pragma unroll
                for (int nt = 0; nt < 4; nt++) kc_mma_u8s8(acc[mt][nt], af[mt], bf[nt]);
        }
        if (kt + 1 < nk) {
            store(buf ^ 1);
            __syncthreads();
        }
    }
    kc_qacc_bias<true>(acc, rq, p.M, col0 + wn * 32, tig);
    /* epilogue: bias, residual, requantization and clamp, one store of uint8 */
    if (kc_qepi16(p, y, res)) {
        __syncthreads(); /* As is free: every warp is past its last fragment load */
        kc_qconv_epilogue16<BN>(acc, rq, res, y, p, P, row0, col0, &As[0][0]);
    } else {
        kc_qconv_epilogue(acc, rq, res, y, p, P, row0 + wm * 64, col0 + wn * 32, g, tig);
    }
#endif
}

/* The channels-in-sixteens form (C % 16 == 0, X on 16 bytes): KC_QSK-byte reduction stages
 * in a KC_QSTAGES-stage cp.async pipeline (16-byte copies straight from X and W into shared
 * memory; a chunk in the padding is an ordinary store of the zero point, one past K or the
 * last pixel of zeros), rows padded by 16 bytes (48 or 80: conflict-free fragment loads),
 * the stages in dynamic shared memory. The reduction index walks (ky, kx, c) incrementally:
 * no division in the loop. Same tiles, warps, fragments and epilogue as kc_qconv_mma_kernel. */
#ifndef KC_QSTAGES
#define KC_QSTAGES 4 /* H200 ResNet-50 batch 256, 32-byte stages: 10.99 ms against 11.06 with 3 */
#endif
/* reduction bytes a stage, 32 or 64 (Kp is a multiple of 64): H200 ResNet-50 batch 256
 * 10.33 -> 9.04 ms with 64 (4 stages, 80 KB: one barrier and two mma k-steps a stage; the
 * 3x3 layers 3.14 -> 2.33 ms), batch 1 0.985 -> 0.788 ms */
#ifndef KC_QSK
#define KC_QSK 64
#endif
#define KC_QLD16 (KC_QSK + 16)
/* KC_QCOLS 1: the grid's x walks the column tiles of one row tile (blocks that read the same
 * A tile run together: it comes from L2 after the first), else the row tiles. H200 ResNet-50
 * batch 256 with 64-byte stages: 9.04 -> 8.81 ms */
#ifndef KC_QCOLS
#define KC_QCOLS 1
#endif
/* KC_QADDR 1: a row's base address made once (its pixel's first tap) and each stage's tap
 * offset once for all rows, so a copy costs one add and two unsigned bounds tests (an A/B knob:
 * H200 ResNet-50 INT8 batch 256 7.499 -> 7.626 ms, the 128 x 128 tile spilling 12 bytes again) */
#ifndef KC_QADDR
#define KC_QADDR 0
#endif
/* KC_QZFILL 1 (with KC_QADDR): where x_zp is 0 (ResNet-50's layers after a ReLU), every copy a
 * cp.async whose source size is 0 where the chunk is padding, past K or past the last pixel
 * (an A/B knob: layer1's 256 x 64 3x3 80.3 M warp instructions under ncu against main's 95.8 M,
 * but ResNet-50 batch 256 7.49 -> 7.68 ms: the 128 x 128 tile spills 8 bytes and its layers lose
 * 0.004-0.02 ms each) */
#ifndef KC_QZFILL
#define KC_QZFILL 0
#endif
#define KC_QTILE_ROW (KC_QCOLS ? blockIdx.y : blockIdx.x)
#define KC_QTILE_COL (KC_QCOLS ? blockIdx.x : blockIdx.y)
/* the stages' bytes of a BM x BN tile in ST stages */
#define KC_QSMEM16(BN, BM, ST) ((ST) * ((BM) + (BN)) * KC_QLD16)
static __device__ __forceinline__ void kc_cp16(void *smem, const void *g) {
    unsigned a = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(a), "l"(g));
}
/* 16 bytes from g, or 16 zeros where !ok (the source size 0: nothing read) */
static __device__ __forceinline__ void kc_cp16z(void *smem, const void *g, bool ok) {
    unsigned a = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(a), "l"(g), "r"(ok ? 16 : 0));
}
/* kc_cp16z, except that where !ok and zp, the 16 bytes are zp4's (a padding position's x_zp,
 * which the zero fill cannot give: a store) */
static __device__ __forceinline__ void kc_cp16zp(void *smem, const void *g, bool ok, bool zp, uint32_t zp4) {
    if (ok || !zp) kc_cp16z(smem, g, ok);
    else *(uint4 *)smem = make_uint4(zp4, zp4, zp4, zp4);
}

/* A block: BM x BN outputs (BM 128 or 256), BM / 64 x BN / 32 warps of 64 x 32, ST stages */
template <int BN, int BM = KC_QBM, int ST = KC_QSTAGES>
__global__ void __launch_bounds__(BM * BN / 64)
kc_qconv_mma16_kernel(const uint8_t *__restrict__ x, const int8_t *__restrict__ w,
                      const int32_t *__restrict__ rq, const uint8_t *__restrict__ res,
                      uint8_t *__restrict__ y, KcQConv p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    kc_pdl_sync();
    extern __shared__ __align__(16) uint8_t kc_qsm[];
    enum { THREADS = BM * BN / 64, WMS = BM / 64, CPR = KC_QSK / 16, LD = KC_QLD16 };
    enum { AP = BM * CPR / THREADS, BP = BN * CPR / THREADS, RSTEP = THREADS / CPR };
    uint8_t *const As = kc_qsm, *const Bs = kc_qsm + ST * BM * LD;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, tig = lane & 3, wm = warp % WMS, wn = warp / WMS;
    const int P = p.N * p.OH * p.OW;
    const int row0 = KC_QTILE_ROW * BM, col0 = KC_QTILE_COL * BN;
    const int h = tid % CPR; /* this thread's 16-byte chunk of a stage's row */
    int abase[AP], ay0[AP], ax0[AP];
#pragma unroll
    for (int i = 0; i < AP; i++) {
        int pix = row0 + tid / CPR + RSTEP * i;
        if (pix < P) {
            int img = pix / (p.OH * p.OW), rem = pix - img * (p.OH * p.OW);
            int oy = rem / p.OW, ox = rem - oy * p.OW;
            abase[i] = img * p.H * p.W * p.C;
            ay0[i] = oy * p.sh - p.ph, ax0[i] = ox * p.sw - p.pw;
#if KC_QADDR
            abase[i] += (ay0[i] * p.W + ax0[i]) * p.C;
#endif
        } else {
            abase[i] = -1, ay0[i] = KC_QADDR ? -(1 << 29) : 0, ax0[i] = 0;
        }
    }
    const int8_t *wrow[BP];
    bool wok[BP];
#pragma unroll
    for (int i = 0; i < BP; i++) {
        int nb = col0 + tid / CPR + RSTEP * i;
        wok[i] = nb < p.M;
        wrow[i] = w + (size_t)(wok[i] ? nb : 0) * p.Kp + h * 16;
    }
    const uint32_t zp4 = 0x01010101u * (uint32_t)p.x_zp;
    /* the reduction position of this thread's next chunk: channel c of tap (ky, kx) */
    int c = h * 16, ky = 0, kx = 0;
    while (c >= p.C) c -= p.C, kx = kx + 1 == p.S ? (ky++, 0) : kx + 1;
    int32_t acc[4][4][4];
    kc_qacc_bias(acc, rq, p.M, col0 + wn * 32, tig);
    const int nk = p.Kp / KC_QSK;
    auto issue = [&](int kt) {
        const int buf = kt % ST;
#if KC_QADDR
        /* the tap's offset, the same for every row: a row adds its own base; a row past the
         * last pixel fails the bounds test (its zero-point bytes are never stored) */
        const int dy = ky * p.dh, dx = kx * p.dw, off = (dy * p.W + dx) * p.C + c;
        if (KC_QZFILL && p.x_zp == 0) { /* every fill is zeros: predicated copies, no branch */
            const bool tap = ky < p.R;
#pragma unroll
            for (int i = 0; i < AP; i++) {
                bool ok = tap && (unsigned)(ay0[i] + dy) < (unsigned)p.H &&
                          (unsigned)(ax0[i] + dx) < (unsigned)p.W;
                kc_cp16z(As + buf * BM * LD + (tid / CPR + RSTEP * i) * LD + h * 16,
                         ok ? x + (abase[i] + off) : x, ok);
            }
#pragma unroll
            for (int i = 0; i < BP; i++)
                kc_cp16z(Bs + buf * BN * LD + (tid / CPR + RSTEP * i) * LD + h * 16,
                         wrow[i] + kt * KC_QSK, wok[i]);
            asm volatile("cp.async.commit_group;\n" ::);
            c += KC_QSK;
            while (c >= p.C) c -= p.C, kx = kx + 1 == p.S ? (ky++, 0) : kx + 1;
            return;
        }
#pragma unroll
        for (int i = 0; i < AP; i++) {
            uint8_t *dst = As + buf * BM * LD + (tid / CPR + RSTEP * i) * LD + h * 16;
            if (ky >= p.R)
                *(uint4 *)(void *)dst = make_uint4(0, 0, 0, 0);
            else if ((unsigned)(ay0[i] + dy) >= (unsigned)p.H || (unsigned)(ax0[i] + dx) >= (unsigned)p.W)
                *(uint4 *)(void *)dst = make_uint4(zp4, zp4, zp4, zp4);
            else
                kc_cp16(dst, x + (abase[i] + off));
        }
#else
#pragma unroll
        for (int i = 0; i < AP; i++) {
            uint8_t *dst = As + buf * BM * LD + (tid / CPR + RSTEP * i) * LD + h * 16;
            int iy = ay0[i] + ky * p.dh, ix = ax0[i] + kx * p.dw;
            if (abase[i] < 0 || ky >= p.R)
                *(uint4 *)(void *)dst = make_uint4(0, 0, 0, 0);
            else if (iy < 0 || iy >= p.H || ix < 0 || ix >= p.W)
                *(uint4 *)(void *)dst = make_uint4(zp4, zp4, zp4, zp4);
            else
                kc_cp16(dst, x + abase[i] + (iy * p.W + ix) * p.C + c);
        }
#endif
#pragma unroll
        for (int i = 0; i < BP; i++) {
            uint8_t *bdst = Bs + buf * BN * LD + (tid / CPR + RSTEP * i) * LD + h * 16;
            if (wok[i]) kc_cp16(bdst, wrow[i] + kt * KC_QSK);
            else *(uint4 *)(void *)bdst = make_uint4(0, 0, 0, 0);
        }
        asm volatile("cp.async.commit_group;\n" ::);
        c += KC_QSK;
        while (c >= p.C) c -= p.C, kx = kx + 1 == p.S ? (ky++, 0) : kx + 1;
    };
#pragma unroll
    for (int st = 0; st < ST - 1; st++) {
        if (st < nk) issue(st);
        else asm volatile("cp.async.commit_group;\n" ::);
    }
    for (int kt = 0; kt < nk; kt++) {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(ST - 2));
        __syncthreads();
        if (kt + ST - 1 < nk) issue(kt + ST - 1);
        else asm volatile("cp.async.commit_group;\n" ::);
        const int buf = kt % ST;
#pragma unroll
        for (int ks = 0; ks < KC_QSK; ks += 32) {
            uint32_t af[4][4], bf[4][2];
            kc_qfrags<LD>(af, bf, As + buf * BM * LD + wm * 64 * LD + ks,
                          Bs + buf * BN * LD + wn * 32 * LD + ks, lane);
#pragma unroll
            for (int mt = 0; mt < 4; mt++)
#pragma unroll
                for (int nt = 0; nt < 4; nt++) kc_mma_u8s8(acc[mt][nt], af[mt], bf[nt]);
        }
    }
    asm volatile("cp.async.wait_group 0;\n" ::);
    if (kc_qepi16(p, y, res)) {
        __syncthreads(); /* As is free: every warp is past its last fragment load */
        kc_qconv_epilogue16<BN, false, BM>(acc, rq, res, y, p, P, row0, col0, As);
    } else {
        kc_qconv_epilogue(acc, rq, res, y, p, P, row0 + wm * 64, col0 + wn * 32, g, tig);
    }
#endif
}

/* kc_qconv_mma16_kernel with its stages' dynamic shared memory (the opt-in past 48 KB asked
 * once per column tile) */
template <int BN, int BM = KC_QBM, int ST = KC_QSTAGES>
static inline void kc_qconv16_launch(cudaStream_t s, dim3 grid, const uint8_t *x, const int8_t *w,
                                     const int32_t *rq, const uint8_t *r, uint8_t *y,
                                     const KcQConv *p) {
    static bool opted;
    if (!opted && KC_QSMEM16(BN, BM, ST) > 48 * 1024) {
        cudaFuncSetAttribute(kc_qconv_mma16_kernel<BN, BM, ST>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, KC_QSMEM16(BN, BM, ST));
        opted = true;
    }
    kc_qlaunch(kc_qconv_mma16_kernel<BN, BM, ST>, grid, dim3(BM * BN / 64), KC_QSMEM16(BN, BM, ST),
               s, x, w, rq, r, y, *p);
}

/* The 1x1 form (R = S = 1, no padding, any stride; C % 16 == 0, M % 16 == 0, Kp = KP of 64,
 * 128 or 256, X, W, Y and the residual on 16 bytes): the layers with one to four 64-byte
 * stages, where kc_qconv_mma16_kernel spends a block's life filling its pipeline and then
 * waiting on its epilogue. Here a block keeps its BN x KP weights in shared memory and walks
 * the row tiles t = blockIdx.y, + gridDim.y, ... (a grid of the resident blocks), each
 * tile's whole reduction (128 x KP bytes of X) and its residual tile (128 x BN) brought by
 * one cp.async group while the tile before is multiplied and requantized: two buffers of
 * each (or three, KC_Q1BUF3_KMAX), one barrier at a tile's start. Same fragments, mma, epilogue (kc_qconv_epilogue16
 * with the residual already in place) and arithmetic: the same bytes. */
#ifndef KC_Q1X1
#define KC_Q1X1 1 /* 0: the 1x1 layers take kc_qconv_mma16_kernel (an A/B knob) */
#endif
/* the longest reduction it takes (64, 128, 256; 512 with 64-channel tiles). H200 ResNet-50
 * batch 256 against the tiled kernel, with the table epilogue (docs/cuda.md, INT8, 2026-11-28
 * KMAX section): K 64 and 128 faster; K 256 faster at unit stride (layer1 conv1 0.147 -> 0.091
 * ms, layer2.0 conv1 0.214 -> 0.164, layer3 conv3 0.134 -> 0.101; the model 8.128 -> 7.786 ms)
 * but not strided (layer2 downsample 0.209 -> 0.246: KC_Q1X1_S2_KMAX); 512 (64-channel tiles)
 * slower (layer3 downsample 0.154 -> 0.469, the model 8.18 ms) */
#ifndef KC_Q1X1_KMAX
#define KC_Q1X1_KMAX 256
#endif
/* the longest reduction it takes on a strided layer (the row gather: a tile's rows are not
 * one run of memory, and the 256-byte rows double each cp.async's scattered reads) */
#ifndef KC_Q1X1_S2_KMAX
#define KC_Q1X1_S2_KMAX 128 /* (an A/B knob) */
#endif
/* buffers of X rows and residual: three (two tiles in flight) where KP <= KC_Q1BUF3_KMAX, else
 * two (an A/B knob, off) */
#ifndef KC_Q1BUF3_KMAX
#define KC_Q1BUF3_KMAX 0
#endif
/* 64-row tiles (kc_qconv1x1_kernel's BM) where Kp >= KC_Q1BM64_KMIN (0: 128-row tiles
 * everywhere; an A/B knob): warps of 32 rows, half the shared memory a block, so that K 256
 * with a residual (141 KB at 128 rows: one block an SM) takes two. H200 ResNet-50 INT8 batch
 * 256, one call: 4.728 / 4.735 ms at 0 -> 4.669 / 4.681 at 256 (layer3 conv3 0.087 -> 0.077 ms
 * each; layer2.0 conv1, K 256 without a residual, 0.114 -> 0.124), 4.708 / 4.711 at 64 */
#ifndef KC_Q1BM64_KMIN
#define KC_Q1BM64_KMIN 256
#endif
#define KC_Q1BMOF(KP) (KC_Q1BM64_KMIN && (KP) >= KC_Q1BM64_KMIN ? 64 : KC_QBM)
/* the column tile (0: 128 where M >= 128, else 64; an A/B knob: 64 measured no faster) */
#ifndef KC_Q1BN
#define KC_Q1BN 0
#endif
#define KC_Q1NB(KP) ((KP) <= KC_Q1BUF3_KMAX ? 3 : 2)
#define KC_Q1LD(KP) ((KP) + 16)
/* the block's channel table: three int4 a channel pair (kc_q1tab_make) */
#define KC_Q1TAB(BN) ((BN) / 2 * 48)
#define KC_Q1SMEM(BN, KP, BM)                                                               \
    (((BN) + KC_Q1NB(KP) * (BM)) * KC_Q1LD(KP) + KC_Q1NB(KP) * (BM) * KC_QYLD(BN) + KC_Q1TAB(BN))
/* Without a residual, where an X buffer holds an output tile (KP >= BN), the tile's own X
 * buffer takes its output once every warp has multiplied it: no output buffers. K 256 with
 * 128-channel tiles: 141 KB -> 105 KB, two blocks an SM instead of one (KC_Q1ALIAS 0: off) */
#ifndef KC_Q1ALIAS
#define KC_Q1ALIAS 1
#endif
#define KC_Q1ALIASES(BN, KP) (KC_Q1ALIAS && KC_Q1LD(KP) >= KC_QYLD(BN))
#define KC_Q1SMEM_NR(BN, KP, BM)                                                            \
    (KC_Q1ALIASES(BN, KP) ? ((BN) + KC_Q1NB(KP) * (BM)) * KC_Q1LD(KP) + KC_Q1TAB(BN)            \
                          : KC_Q1SMEM(BN, KP, BM))

/* The requantization terms of the 1x1 block's BN channels from col0 on, made once a block
 * where kc_qconv_epilogue16 makes them again for every tile (an ncu profile of layer1 conv3,
 * H200: about 110 of the 345 instructions a thread spends on 16 outputs): pair i of
 * channels (col0 + 2i, + 1) as three int4 -- {m0, m1, rm0, rm1}, {k0 of both as low and high
 * words, the bias folded in: the kernels' sums start at 0}, {unused, unused, s0 | pw0 << 8,
 * s1 | pw1 << 8 (pw = 2^rk)} -- in one form for the whole block:
 * kc_qhi_terms' where every channel has them, else kc_qrequant_k's (rk 0). Returns the form
 * of kc_qepi_pair: 2 (s32 0 on every channel, with a residual), 1, or 0, plus 4 where the clamp
 * is the byte's own range (lo 0, hi 255: KC_QPLAIN). Every thread calls
 * it (two __syncthreads_and); the table is read after the caller's next barrier. Channels
 * past M: zeros (never stored). */
static __device__ __forceinline__ int kc_q1tab_make(int4 *tab, const int32_t *__restrict__ rq,
                                                    const uint8_t *res, const KcQConv &p, int col0,
                                                    int pairs) {
    const int i = threadIdx.x, n = col0 + 2 * i;
    KcQPair c = {}, hi = {};
    bool ok = true, z = true;
    if (i < pairs) {
#pragma unroll
        for (int j = 0; j < 2; j++) {
            bool in = n + j < p.M;
            c.m[j] = in ? rq[p.M + n + j] : 0, c.rm[j] = in && res ? rq[2 * p.M + n + j] : 0;
            c.s[j] = in ? rq[3 * p.M + n + j] : 32, c.pw[j] = 1;
            /* the bias folded in (acc m + bias m = (acc + bias) m: the kernels' sums start at 0) */
            c.k0[j] = in ? kc_qk0(rq, p.M, n + j, res ? p.r_zp : 0) + (int64_t)rq[n + j] * c.m[j] : 0;
        }
        hi = c;
        int rk[2];
        ok = kc_qhi_terms(hi.m[0], hi.k0[0], rk[0], hi.s[0], c.s[0], p.y_zp) &&
             kc_qhi_terms(hi.m[1], hi.k0[1], rk[1], hi.s[1], c.s[1], p.y_zp);
        hi.pw[0] = ok ? 1 << rk[0] : 1, hi.pw[1] = ok ? 1 << rk[1] : 1;
        z = (hi.s[0] | hi.s[1]) == 0;
    }
    const bool allhi = __syncthreads_and(ok), s0 = __syncthreads_and(z);
    if (i < pairs) {
        const KcQPair t = allhi ? hi : c; /* a copy: a reference took a stack frame */
        tab[3 * i] = make_int4(t.m[0], t.m[1], t.rm[0], t.rm[1]);
        tab[3 * i + 1] = make_int4((int32_t)(uint32_t)(uint64_t)t.k0[0], (int32_t)(t.k0[0] >> 32),
                                   (int32_t)(uint32_t)(uint64_t)t.k0[1], (int32_t)(t.k0[1] >> 32));
        tab[3 * i + 2] = make_int4(0, 0, t.s[0] | t.pw[0] << 8, t.s[1] | t.pw[1] << 8);
    }
    const int form = !allhi ? 0 : s0 && res ? 2 : 1;
    return form && KC_QPLAIN && p.lo == 0 && p.hi == 255 ? form | 4 : form;
}

/* CALL(RES, FORM): the epilogue instantiation for kc_q1tab_make's form and the residual (2
 * and 6, s32 0 on every channel, only with one); the one place that maps a block's form to the
 * 1x1 and wgmma kernels' epilogue templates */
#define KC_QFORM_CALL(form, res, CALL)                                                      \
    do {                                                                                    \
        if ((form) == 6) CALL(true, 6);                                                     \
        else if (((form) & 3) == 2) CALL(true, 2);                                          \
        else if (((form) & 3) == 1 && (res)) CALL(true, 1);                                 \
        else if ((form) == 5) CALL(false, 5);                                               \
        else if ((form) == 1) CALL(false, 1);                                               \
        else if (res) CALL(true, 0);                                                        \
        else CALL(false, 0);                                                                \
    } while (0)

/* c: the terms of the block's channel pair (cl, cl + 1) from kc_q1tab_make's table, in FORM */
template <int FORM>
static __device__ __forceinline__ void kc_q1tab_pair(KcQPair &c, const int4 *tab, int cl, const KcQConv &p) {
    const int4 a = tab[3 * (cl >> 1)], k = tab[3 * (cl >> 1) + 1], b = tab[3 * (cl >> 1) + 2];
    c.m[0] = a.x, c.m[1] = a.y, c.rm[0] = a.z, c.rm[1] = a.w;
    c.k0[0] = (int64_t)(((uint64_t)(uint32_t)k.y << 32) | (uint32_t)k.x);
    c.k0[1] = (int64_t)(((uint64_t)(uint32_t)k.w << 32) | (uint32_t)k.z);
    c.s[0] = b.z & 255, c.s[1] = b.w & 255, c.pw[0] = b.z >> 8, c.pw[1] = b.w >> 8;
    c.l = FORM ? p.lo : p.lo - p.y_zp, c.h = FORM ? p.hi : p.hi - p.y_zp, c.y_zp = p.y_zp;
}

/* kc_qconv_epilogue16 (the residual tile already in ys) with kc_q1tab_make's table and form */
template <int BN, bool RES, int FORM, int BM = KC_QBM>
static __device__ __forceinline__ void
kc_qepi16_tab(const int32_t (&acc)[BM / 32][4][4], const int4 *tab, uint8_t *__restrict__ y,
              const KcQConv &p, int P, int row0, int col0, uint8_t *ys) {
    enum { LD = KC_QYLD(BN), MT = BM / 32 };
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, tig = lane & 3, wm = warp & 1, wn = warp >> 1;
#pragma unroll
    for (int nt = 0; nt < 4; nt++) {
        const int cl = wn * 32 + nt * 8 + tig * 2;
        if (col0 + cl >= p.M) continue;
        KcQPair c;
        kc_q1tab_pair<FORM>(c, tab, cl, p);
        kc_qepi_pair<RES, FORM, LD, MT>(acc, nt, c, ys + (wm * BM / 2 + g) * LD + cl);
    }
    __syncthreads();
    kc_qepi16_store<BN, BM, 2 * BN>(y, p, P, row0, col0, ys);
}

/* the byte offset in X of output pixel pix's input (1x1, no padding) */
static __device__ __forceinline__ size_t kc_q1row(const KcQConv &p, int pix) {
    if (p.sh == 1 && p.sw == 1) return (size_t)pix * p.C;
    int hw = p.OH * p.OW, img = pix / hw, rem = pix - img * hw, oy = rem / p.OW, ox = rem - oy * p.OW;
    return ((size_t)(img * p.H + oy * p.sh) * p.W + (size_t)ox * p.sw) * p.C;
}

/* blocks an SM the 1x1 kernel's registers allow for (an A/B knob: 1 leaves ptxas its 128) */
#ifndef KC_Q1MINB
#define KC_Q1MINB 2
#endif
/* BM: the row tile, 128 or 64 (KC_Q1BM64_KMIN; warps of 32 rows instead of 64, half the
 * shared memory a block) */
template <int BN, int KP, int BM = KC_QBM>
__global__ void __launch_bounds__(2 * BN, KC_Q1MINB)
kc_qconv1x1_kernel(const uint8_t *__restrict__ x, const int8_t *__restrict__ w,
                   const int32_t *__restrict__ rq, const uint8_t *__restrict__ res,
                   uint8_t *__restrict__ y, KcQConv p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    extern __shared__ __align__(16) uint8_t kc_qsm[];
    enum { THREADS = 2 * BN, LD = KC_Q1LD(KP), YLD = KC_QYLD(BN), CPR = KP / 16 };
    enum { RSTEP = THREADS / CPR, AP = BM / RSTEP, BP = BN / RSTEP };
    enum { RCH = BN / 16, RP = BM * RCH / THREADS, NB = KC_Q1NB(KP), MT = BM / 32 };
    const bool alias = KC_Q1ALIASES(BN, KP) && !res; /* the output tile in its X buffer */
    uint8_t *const Ws = kc_qsm, *const As = kc_qsm + BN * LD, *const Ys = As + NB * BM * LD;
    int4 *const tab = (int4 *)(void *)(Ys + (alias ? 0 : NB * BM * YLD));
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp & 1, wn = warp >> 1;
    const int P = p.N * p.OH * p.OW, ntiles = (P + BM - 1) / BM;
    const int col0 = blockIdx.x * BN;
    const int h = tid % CPR, r0 = tid / CPR; /* this thread's 16-byte chunk and first row */
    const bool cin = h * 16 < p.C;           /* past C: zeros (W is 0 there too) */
#pragma unroll
    for (int i = 0; i < BP; i++) {
        int n = col0 + r0 + RSTEP * i;
        uint8_t *d = Ws + (r0 + RSTEP * i) * LD + h * 16;
        if (n < p.M) kc_cp16(d, w + (size_t)n * p.Kp + h * 16);
        else *(uint4 *)(void *)d = make_uint4(0, 0, 0, 0);
    }
    /* row tile t's X rows and residual into buffer b, one group (empty past the last tile) */
    auto issue = [&](int t, int b) {
        /* a whole tile of unit stride and C = KP: one pointer a thread and constant steps
         * (the general form below spent about 190 instructions a tile on its addresses and
         * predicates) */
        if (t < ntiles && (t + 1) * BM <= P && p.sh == 1 && p.sw == 1 && p.C == KP &&
            col0 + BN <= p.M) {
            const int row0 = t * BM;
            uint8_t *a = As + b * BM * LD + r0 * LD + h * 16;
            const uint8_t *src = x + (size_t)(row0 + r0) * KP + h * 16;
#pragma unroll
            for (int i = 0; i < AP; i++) kc_cp16(a + RSTEP * i * LD, src + (size_t)RSTEP * i * KP);
            if (res) {
                const int rr = tid / RCH, q = tid % RCH;
                uint8_t *e = Ys + b * BM * YLD + rr * YLD + q * 16;
                const uint8_t *rs = res + (size_t)(row0 + rr) * p.M + col0 + q * 16;
                const size_t step = (size_t)(THREADS / RCH) * p.M;
#pragma unroll
                for (int i = 0; i < RP; i++) kc_cp16(e + (THREADS / RCH) * i * YLD, rs + step * i);
            }
        } else if (t < ntiles) {
            const int row0 = t * BM;
            uint8_t *a = As + b * BM * LD;
#pragma unroll
            for (int i = 0; i < AP; i++) {
                int rr = r0 + RSTEP * i, pix = row0 + rr;
                uint8_t *d = a + rr * LD + h * 16;
                if (pix < P && cin) kc_cp16(d, x + kc_q1row(p, pix) + h * 16);
                else *(uint4 *)(void *)d = make_uint4(0, 0, 0, 0);
            }
            if (res) {
                uint8_t *e = Ys + b * BM * YLD;
#pragma unroll
                for (int i = 0; i < RP; i++) {
                    int j = tid + THREADS * i, rr = j / RCH, q = j % RCH, pix = row0 + rr, n = col0 + q * 16;
                    if (pix < P && n < p.M) kc_cp16(e + rr * YLD + q * 16, res + (size_t)pix * p.M + n);
                }
            }
        }
        asm volatile("cp.async.commit_group;\n" ::);
    };
    const int form = kc_q1tab_make(tab, rq, res, p, col0, BN / 2); /* while the weights fly */
    kc_pdl_sync();
    issue(blockIdx.y, 0); /* the weights ride in the first group */
    if (NB == 3) issue(blockIdx.y + gridDim.y, 1);
    int b = 0;
    for (int t = blockIdx.y; t < ntiles; t += gridDim.y, b = b + 1 == NB ? 0 : b + 1) {
        if (NB == 3) asm volatile("cp.async.wait_group 1;\n" ::);
        else asm volatile("cp.async.wait_group 0;\n" ::);
        __syncthreads(); /* tile t is in; every thread is done with the tile before's buffer */
        issue(t + (NB - 1) * gridDim.y, b == 0 ? NB - 1 : b - 1);
        int32_t acc[MT][4][4] = {}; /* the bias is in the table's k0 */
        const uint8_t *a = As + b * BM * LD + wm * (BM / 2) * LD, *wb = Ws + wn * 32 * LD;
#pragma unroll
        for (int ks = 0; ks < KP; ks += 32) {
            uint32_t af[MT][4], bf[4][2];
            kc_qfrags<LD, MT>(af, bf, a + ks, wb + ks, lane);
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int nt = 0; nt < 4; nt++) kc_mma_u8s8(acc[mt][nt], af[mt], bf[nt]);
        }
        uint8_t *ys = Ys + b * BM * YLD;
        if (alias) {
            ys = As + b * BM * LD;
            __syncthreads(); /* every warp has read the X tile the output overwrites */
        }
#define KC_Q1EPI(R, F) kc_qepi16_tab<BN, R, F, BM>(acc, tab, y, p, P, t * BM, col0, ys)
        KC_QFORM_CALL(form, res, KC_Q1EPI);
#undef KC_Q1EPI
    }
    asm volatile("cp.async.wait_group 0;\n" ::);
#endif
}

/* Blocks of kern (threads each, smem bytes of dynamic shared memory) the device holds at once,
 * and its multiprocessors in *sms; 0 (and *sms 0) where the runtime does not say. kern's
 * shared-memory limit is raised to smem where lower, never lowered under an earlier launch's. */
template <typename K>
static inline int64_t kc_qresident(K *kern, int threads, size_t smem, int *sms) {
    int dev = 0, per = 0;
    cudaFuncAttributes fa;
    *sms = 0;
    if (cudaFuncGetAttributes(&fa, kern) != cudaSuccess ||
        ((size_t)fa.maxDynamicSharedSizeBytes < smem &&
         cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess) ||
        cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kern, threads, smem) != cudaSuccess) {
        *sms = 0;
        return 0;
    }
    return (int64_t)per * *sms;
}

/* one launch of kc_qconv1x1_kernel: as many row-tile walkers per column tile as fill the
 * device's resident blocks (asked once per instantiation) */
template <int BN, int KP, int BM>
static inline void kc_qconv1x1_launch(cudaStream_t s, const uint8_t *x, const int8_t *w,
                                      const int32_t *rq, const uint8_t *r, uint8_t *y,
                                      const KcQConv *p) {
    static int64_t resident[2]; /* blocks the device holds at once, with and without r */
    const int hr = r != NULL;
    const int smem = hr ? KC_Q1SMEM(BN, KP, BM) : KC_Q1SMEM_NR(BN, KP, BM);
    if (!resident[hr]) {
        int sms;
        resident[hr] = kc_qresident(kc_qconv1x1_kernel<BN, KP, BM>, 2 * BN, (size_t)smem, &sms);
        if (resident[hr] < 1) resident[hr] = 1;
    }
    int64_t P = (int64_t)p->N * p->OH * p->OW, tiles = (P + BM - 1) / BM;
    int cols = (p->M + BN - 1) / BN;
    int64_t rows = resident[hr] / cols;
    if (rows < 1) rows = 1;
    if (rows > tiles) rows = tiles;
    if (rows > 65535) rows = 65535;
    kc_qlaunch(kc_qconv1x1_kernel<BN, KP, BM>, dim3((unsigned)cols, (unsigned)rows), dim3(2 * BN),
               smem, s, x, w, rq, r, y, *p);
}

/* Whether the 1x1 form takes the layer (bn 0: 128 where M >= 128, else 64), and its launch */
static inline bool kc_qconv1x1(cudaStream_t s, const uint8_t *x, const int8_t *w, const int32_t *rq,
                               const uint8_t *r, uint8_t *y, const KcQConv *p, int bn = 0) {
    if (p->R != 1 || p->S != 1 || p->ph != 0 || p->pw != 0 || p->C % 16 ||
        p->M % 16 || p->Kp > KC_Q1X1_KMAX || (p->Kp & (p->Kp - 1)) || p->Kp < 64 ||
        ((p->sh != 1 || p->sw != 1) && p->Kp > KC_Q1X1_S2_KMAX) ||
        (((uintptr_t)x | (uintptr_t)w | (uintptr_t)y | (uintptr_t)r) & 15))
        return false;
    if (!bn) bn = KC_Q1BN ? KC_Q1BN : p->M >= 128 && p->Kp <= 256 ? 128 : 64;
#define KC_Q1CASE(B, K)                                                                     \
    if (bn == B && p->Kp == K)                                                              \
        return kc_qconv1x1_launch<B, K, KC_Q1BMOF(K)>(s, x, w, rq, r, y, p), true;
    KC_Q1CASE(128, 64) KC_Q1CASE(128, 128) KC_Q1CASE(128, 256)
    KC_Q1CASE(64, 64) KC_Q1CASE(64, 128) KC_Q1CASE(64, 256)
#if KC_Q1X1_KMAX >= 512 /* 64-channel tiles only: 185 KB of shared memory, one block an SM */
    KC_Q1CASE(64, 512)
#endif
#undef KC_Q1CASE
    return false;
}

/* ---- the wgmma form (sm_90a): the dense layers the 1x1 and stem forms leave, where C and M
 * are multiples of 16, the kernel has at most 32 taps and x, w, y and the residual sit on 16
 * bytes ----
 * kc_igemm_wg_kernel's structure on int8: a warpgroup multiplies a 64-pixel slab of the
 * block's A tile by the whole B tile with wgmma m64nBNk32 (uint8 x int8 -> int32), both read
 * from shared memory through descriptors in the 128-byte swizzle (16-byte chunk c of row r at
 * c ^ (r % 8)); 128-byte reduction slices, four k32 steps each, land ST - 2 ahead by cp.async
 * and one wgmma group stays in flight. A: each row's 16-byte chunks gathered at the (tap,
 * channel) cursor of kc_igemm's cores, a padding tap's chunk x_zp bytes (a store; a zero-size
 * copy where x_zp is 0), a chunk past the reduction zeros. B: W's rows as stored, (M, Kp) with
 * the reduction contiguous (K-major, the only major 8-bit wgmma reads), zeros past Kp. The
 * epilogue is the 1x1 form's: the block's channel table (kc_q1tab_make, made while the first
 * slices land), the residual tile copied into the output tile, kc_qepi_quad on each 16 x 8
 * block of the accumulators (wgmma's layout is the mma.sync fragment's, a warp's 16 rows),
 * 16-byte row stores. Same integer sums, the same requantization: the C target's bytes. */
#define KC_QWG_BK 128 /* reduction bytes a slice: one 128-byte swizzle row */
#ifndef KC_QWG
#define KC_QWG 1 /* 0: those layers take kc_qconv_mma16_kernel (an A/B knob; kc_qwg_mode; 2:
                  * the 1x1 form's layers too) */
#endif
#ifndef KC_QHALO
#define KC_QHALO 1 /* 0: the halo form's layers take the wgmma form (an A/B knob) */
#endif

template <int BM, int BN, int ST>
struct KcQwSmem {
    static const int A = BM * KC_QWG_BK, B = BN * KC_QWG_BK, PIPE = ST * (A + B);
    static const int OUT = BM * KC_QYLD(BN);
    static const int BYTES = (PIPE > OUT ? PIPE : OUT) + 1024; /* + the base aligned up */
};

/* d (64 x 64 a warpgroup, int32) = A (64 x 32 uint8, descriptor da, K-major) * B (32 x 64 int8,
 * db, K-major) + (acc ? d : 0) */
static __device__ __forceinline__ void kc_wgmma_u8s8_n64(int32_t *d, uint64_t da, uint64_t db, int acc) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k32.s32.u8.s8 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p;\n}\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
                 : "l"(da), "l"(db), "r"(acc));
#else
    (void)d, (void)da, (void)db, (void)acc;
#endif
}

/* d (64 x 128 a warpgroup, int32) = A (64 x 32 uint8, descriptor da, K-major) * B (32 x 128 int8,
 * db, K-major) + (acc ? d : 0) */
static __device__ __forceinline__ void kc_wgmma_u8s8_n128(int32_t *d, uint64_t da, uint64_t db, int acc) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k32.s32.u8.s8 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p;\n}\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])
                 : "l"(da), "l"(db), "r"(acc));
#else
    (void)d, (void)da, (void)db, (void)acc;
#endif
}

/* kc_wg_wait for int32 accumulators: at most N wgmma groups pending, then the R values of d
 * pinned at this point of the program */
template <int N, int R>
static __device__ __forceinline__ void kc_qwg_wait(int32_t *d) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
    kc_wg_pin<R>(d);
}

/* The epilogue of a warp's 16 rows (e: its row g of the output tile ys) of BN channels from
 * n0 on: the bias from the block's table added, kc_qepi_quad per 16 x 8 block */
template <int BN, bool RES, int FORM>
static __device__ __forceinline__ void kc_qwg_epi(const int32_t *acc, const int4 *tab, const KcQConv &p,
                                                  int n0, uint8_t *e, int t4) {
#pragma unroll
    for (int j = 0; j < BN / 8; j++) {
        const int cl = j * 8 + t4 * 2;
        if (n0 + cl >= p.M) continue;
        KcQPair c; /* the bias is in its k0 */
        kc_q1tab_pair<FORM>(c, tab, cl, p);
        kc_qepi_quad<RES, FORM, KC_QYLD(BN)>(&acc[4 * j], c, e + cl);
    }
}
/* kc_qwg_epi of the table's form (kc_q1tab_make's) with the residual where res */
template <int BN>
static __device__ __forceinline__ void kc_qwg_epi_any(int form, bool res, const int32_t *acc, const int4 *tab,
                                                      const KcQConv &p, int n0, uint8_t *e, int t4) {
#define KC_QWGEPI(R, F) kc_qwg_epi<BN, R, F>(acc, tab, p, n0, e, t4)
    KC_QFORM_CALL(form, res, KC_QWGEPI);
#undef KC_QWGEPI
}

/* The residual's BM x BN bytes from column n0 into the output tile ys (rows YLD apart), its rows
 * the pixels map gives (-1: none), then a barrier; nothing without one */
template <int BM, int BN, int THREADS, typename Map>
static __device__ __forceinline__ void kc_qwg_res_tile(uint8_t *ys, const uint8_t *res, const KcQConv &p,
                                                       const Map &map, int n0, int tid) {
    if (!res) return;
    for (int i = tid; i < BM * (BN / 16); i += THREADS) {
        const int r = i / (BN / 16), q = i % (BN / 16), pix = map(r), n = n0 + q * 16;
        if (pix >= 0 && n < p.M)
            *(uint4 *)(void *)(ys + r * KC_QYLD(BN) + q * 16) =
                *(const uint4 *)(const void *)(res + (size_t)pix * p.M + n);
    }
    __syncthreads();
}

/* The warpgroup's 64 rows of one 128-byte slice (as, bs: the stage's A rows and B): four
 * wgmma, committed, then at most one group left in flight. The k steps' descriptors are the
 * slice's plus 32 bytes a step in the address field (address >> 4; the stages lie below 2^18
 * bytes and on 16 bytes, so no carry leaves it), where building each one took about ten
 * uniform and vector instructions. */
template <int BN>
static __device__ __forceinline__ void kc_qwg_slice(int32_t *acc, const uint8_t *as,
                                                    const uint8_t *bs, bool first) {
    kc_wg_pin<BN / 2>(acc);
    kc_wg_fence();
    const uint64_t da0 = kc_wg_desc((const __half *)(const void *)as, 16, 1024);
    const uint64_t db0 = kc_wg_desc((const __half *)(const void *)bs, 16, 1024);
#pragma unroll
    for (int kk = 0; kk < KC_QWG_BK / 32; kk++) {
        const uint64_t da = da0 + 2 * kk, db = db0 + 2 * kk;
        if (BN == 64)
            kc_wgmma_u8s8_n64(acc, da, db, !first || kk > 0);
        else
            kc_wgmma_u8s8_n128(acc, da, db, !first || kk > 0);
    }
    kc_wg_commit();
    kc_qwg_wait<1, BN / 2>(acc);
}

/* After the last slice (every wgmma group and copy waited for): the stages become the block's
 * uint8 output tile ys, the residual's rows for pixels m0..pend - 1, the epilogue and the
 * stores, by the threads that multiplied (mul; the others, a copying warp, only take part in
 * the barriers). Every thread of the block calls it. */
template <int BM, int BN, int THREADS>
static __device__ __forceinline__ void
kc_qwg_tail(const int32_t *acc, int form, const int4 *tab, const uint8_t *res, uint8_t *y,
            const KcQConv &p, int n0, int32_t m0, int32_t pend, uint8_t *ys, bool mul) {
    const int tid = threadIdx.x, wg = tid / 128, wq = (tid % 128) / 32, lane = tid % 32;
    __syncthreads();
    kc_qwg_res_tile<BM, BN, THREADS>(ys, res, p, KcRowsFrom{m0, pend}, n0,
                                     mul ? tid : BM * (BN / 16) /* no rows */);
    if (mul)
        kc_qwg_epi_any<BN>(form, res, acc, tab, p, n0,
                           ys + (wg * 64 + wq * 16 + (lane >> 2)) * KC_QYLD(BN), lane & 3);
    __syncthreads();
    if (mul) kc_qepi16_store<BN, BM, THREADS>(y, p, pend, m0, n0, ys);
}

/* Grid (ceil(M / BN), ceil(P / BM)): the column tiles of one row tile run together (the A tile
 * from L2 after the first); BM / 64 warpgroups. */
template <int BM, int BN, int ST>
__global__ void __launch_bounds__(BM / 64 * 128)
    kc_qconv_wg_kernel(const uint8_t *__restrict__ x, const int8_t *__restrict__ w,
                       const int32_t *__restrict__ rq, const uint8_t *__restrict__ res,
                       uint8_t *__restrict__ y, KcQConv p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    typedef KcQwSmem<BM, BN, ST> Sm;
    enum { THREADS = BM / 64 * 128, BK = KC_QWG_BK, ACH = BK / 16 };
    enum { A_PER = BM * ACH / THREADS, A_STEP = THREADS / ACH, B_PER = BN * ACH / THREADS };
    __shared__ int4 tab[BN / 2 * 3]; /* also the mark kc_qconv_wg_built looks for */
    extern __shared__ unsigned char kc_qwg_raw[];
    uint8_t *const sa = (uint8_t *)(void *)kc_wg_smem_base(kc_qwg_raw);
    uint8_t *const sb = sa + ST * Sm::A;
    const int tid = threadIdx.x, wg = tid / 128;
    const int32_t P = p.N * p.OH * p.OW, m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int32_t KT = (p.Kp + BK - 1) / BK;
    const KcGeom<int32_t> geo = {p.C, p.H, p.W, p.R, p.S, p.OH, p.OW, p.sh, p.sw, p.ph, p.pw, p.dh, p.dw};
    const int a_ch = tid % ACH, a_row = tid / ACH;
    KcIgGather<A_PER, A_STEP> ga(geo, m0, P, a_row, a_ch * 16);
    const uint32_t zp4 = 0x01010101u * (uint32_t)p.x_zp;
    /* slice kt (the cursor's: slices load in order) into stage buffer b */
    /* B: a thread's chunk column and first row; whole slices step its rows by wstep */
    const int b_nr = tid / ACH, b_kc = tid % ACH;
    const int8_t *const wrow = w + (size_t)(n0 + b_nr) * p.Kp + b_kc * 16;
    const size_t wstep = (size_t)(THREADS / ACH) * p.Kp;
    auto load = [&](int32_t kt, int b) {
        uint8_t *as = sa + b * Sm::A, *bs = sb + b * Sm::B;
        const int32_t koff = ga.koff();
        if (p.x_zp == 0 || !ga.kin()) { /* the copies' zero fill is the padding (uniform) */
#pragma unroll
            for (int i = 0; i < A_PER; i++) {
                const int row = a_row + i * A_STEP;
                const bool in = ga.in(i);
                kc_cp16z(as + row * BK + (a_ch ^ (row & 7)) * 16, in ? x + (ga.off[i] + koff) : x, in);
            }
        } else {
#pragma unroll
            for (int i = 0; i < A_PER; i++) {
                const int row = a_row + i * A_STEP;
                uint8_t *d = as + row * BK + (a_ch ^ (row & 7)) * 16;
                const bool in = ga.in(i);
                kc_cp16zp(d, in ? x + (ga.off[i] + koff) : x, in, true, zp4);
            }
        }
        ga.cur.step(geo, BK);
        if (n0 + BN <= p.M && (kt + 1) * BK <= p.Kp) { /* a whole slice (uniform) */
#pragma unroll
            for (int i = 0; i < B_PER; i++) {
                const int nr = b_nr + i * (THREADS / ACH);
                kc_cp16(bs + nr * BK + (b_kc ^ (nr & 7)) * 16, wrow + kt * BK + wstep * i);
            }
        } else {
#pragma unroll
            for (int i = 0; i < B_PER; i++) {
                const int q = tid + i * THREADS, nr = q / ACH, kc = q % ACH;
                const int32_t gk = kt * BK + kc * 16, gn = n0 + nr;
                const bool ok = gk < p.Kp && gn < p.M;
                kc_cp16z(bs + nr * BK + (kc ^ (nr & 7)) * 16, ok ? w + ((size_t)gn * p.Kp + gk) : w, ok);
            }
        }
    };
    const int form = kc_q1tab_make(tab, rq, res, p, n0, BN / 2);
    kc_pdl_sync();
#pragma unroll
    for (int st = 0; st < ST - 2; st++) {
        if (st < KT) load(st, st);
        kc_ig_commit();
    }
    int32_t acc[BN / 2]; /* written first by the first slice's wgmma (scale-d 0) */
    for (int32_t kt = 0; kt < KT; kt++) {
        kc_ig_wait<ST - 3>();
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads(); /* slice kt landed; every warpgroup is done with slice kt - 2 */
        const int32_t next = kt + ST - 2;
        if (next < KT) load(next, next % ST);
        kc_ig_commit();
        kc_qwg_slice<BN>(acc, sa + (kt % ST) * Sm::A + wg * 64 * BK, sb + (kt % ST) * Sm::B,
                         kt == 0);
    }
    kc_qwg_wait<0, BN / 2>(acc);
    kc_ig_wait<0>();
    kc_qwg_tail<BM, BN, THREADS>(acc, form, tab, res, y, p, n0, m0, P, sa, true);
#else
    (void)x, (void)w, (void)rq, (void)res, (void)y, (void)p;
#endif
}

/* ---- the int8 halo form (sm_90a): 3x3 stride-1 layers of 64 channels into at most 64 ----
 * kc_conv_halo_kernel's scheme on uint8 (ResNet-50's layer-1 3x3: on the wgmma form each
 * input byte crosses from L2 nine times, 0.23 ms at batch 256 against fp16's halo core at
 * 0.155): a persistent block keeps W's nine taps in shared memory (64 output rows of 64 bytes
 * each, 4 KB a tap, loaded once) and, for each tile of 128 positions of one image's padded
 * grid (q = oh Wp + ow, Wp = W + 2 pw; the columns ow >= OW computed and not stored), loads the
 * input rows its windows cover once, a padding position's row x_zp bytes; tap (r, s)'s A is
 * that tile from row r Wp + s on, a descriptor offset. A row is 64 bytes, so both operands are
 * in the 64-byte swizzle (16-byte chunk c of a row at address a stored at c ^ ((a >> 7) & 3),
 * 8-row groups 512 bytes apart), two k32 steps a tap. The epilogue is the wgmma form's, its
 * rows mapped to pixels (KcRowsHalo). */
#define KC_QHALO_W (9 * 64 * 64) /* W's bytes in shared memory */

/* Descriptor of a K-major operand at p in the 64-byte swizzle (8-row groups 512 bytes apart) */
static __device__ __forceinline__ uint64_t kc_qwg_desc64(const void *p) {
    uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
    return (uint64_t)((a & 0x3FFFF) >> 4) | (uint64_t)1 << 16 | (uint64_t)(512 >> 4) << 32 |
           2ull << 62;
}

/* the physical 16-byte chunk of chunk c of 64-byte row r (rows from a 1024-byte boundary) */
static __device__ __forceinline__ int kc_qswz64(int r, int c) { return c ^ ((r >> 1) & 3); }

/* Bytes of kc_qhalo_kernel's dynamic shared memory for an input of width W: W's taps, the
 * halo tile (or the 128 x 80 output tile, the larger), the base aligned up */
static inline int kc_qhalo_smem(int64_t Wp) {
    int64_t tile = kc_halo_rows(Wp) * 64, out = 128 * KC_QYLD(64);
    int64_t b = KC_QHALO_W + (tile > out ? tile : out) + 1024;
    return b > INT32_MAX ? INT32_MAX : (int)b;
}

#ifndef KC_QHALO_MINB
#define KC_QHALO_MINB 2 /* blocks an SM the registers allow (an A/B knob) */
#endif
__global__ void __launch_bounds__(256, KC_QHALO_MINB)
kc_qhalo_kernel(const uint8_t *__restrict__ x, const int8_t *__restrict__ w, const int32_t *__restrict__ rq,
                const uint8_t *__restrict__ res, uint8_t *__restrict__ y, KcQConv p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    enum { BM = 128, BN = 64, YLD = KC_QYLD(64), CH = BN / 16 };
    __shared__ int4 tab[BN / 2 * 3]; /* also the mark kc_qconv_wg_built's check would see */
    extern __shared__ unsigned char kc_qwg_raw[];
    uint8_t *const sb = (uint8_t *)(void *)kc_wg_smem_base(kc_qwg_raw), *const sh = sb + KC_QHALO_W;
    const int tid = threadIdx.x, wg = tid / 128, wq = (tid % 128) / 32, lane = tid % 32;
    const int32_t Wp = p.W + 2 * p.pw, rows = (int32_t)kc_halo_rows(Wp);
    for (int q = tid; q < 9 * 64 * 4; q += 256) { /* W: tap t's 64 rows n, 4 chunks each */
        const int t = q / 256, n = q / 4 % 64, c = q % 4;
        const bool ok = n < p.M;
        kc_cp16z(sb + t * 4096 + n * 64 + kc_qswz64(n, c) * 16,
                 ok ? w + ((size_t)n * p.Kp + t * 64 + c * 16) : w, ok);
    }
    kc_ig_commit();
    const int form = kc_q1tab_make(tab, rq, res, p, 0, BN / 2);
    kc_pdl_sync();
    const uint32_t zp4 = 0x01010101u * (uint32_t)p.x_zp;
    const int32_t T = (p.OH * Wp + BM - 1) / BM, ntiles = p.N * T;
    for (int32_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
        const int32_t n = tile / T, q0 = tile % T * BM;
        for (int q = tid; q < rows * 4; q += 256) { /* the halo: padded positions q0.. */
            const int i = q / 4, c = q % 4;
            const int32_t pi = q0 + i, ih = pi / Wp - p.ph, iw = pi % Wp - p.pw;
            const bool ok = ih >= 0 && ih < p.H && iw >= 0 && iw < p.W;
            uint8_t *d = sh + i * 64 + kc_qswz64(i, c) * 16;
            kc_cp16zp(d, ok ? x + ((((size_t)n * p.H + ih) * p.W + iw) * 64 + c * 16) : x, ok,
                      p.x_zp != 0, zp4);
        }
        kc_ig_commit();
        kc_ig_wait<0>();
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        int32_t acc[BN / 2];
        kc_wg_pin<BN / 2>(acc);
        kc_wg_fence();
#pragma unroll
        for (int t = 0; t < 9; t++) {
            const uint8_t *as = sh + (wg * 64 + t / 3 * Wp + t % 3) * 64, *bs = sb + t * 4096;
#pragma unroll
            for (int kk = 0; kk < 2; kk++)
                kc_wgmma_u8s8_n64(acc, kc_qwg_desc64(as + kk * 32), kc_qwg_desc64(bs + kk * 32),
                                  t > 0 || kk > 0);
        }
        kc_wg_commit();
        kc_qwg_wait<0, BN / 2>(acc);
        __syncthreads(); /* both warpgroups done with the halo: it becomes the output tile */
        const KcRowsHalo map = {q0, n * p.OH * p.OW, Wp, p.OW, p.OH};
        kc_qwg_res_tile<BM, BN, 256>(sh, res, p, map, 0, tid);
        kc_qwg_epi_any<BN>(form, res, acc, tab, p, 0, sh + (wg * 64 + wq * 16 + (lane >> 2)) * YLD, lane & 3);
        __syncthreads();
        for (int i = tid; i < BM * CH; i += 256) {
            const int r = i / CH, c = i % CH, pix = map(r);
            if (pix >= 0 && c * 16 < p.M)
                *(uint4 *)(void *)(y + (size_t)pix * p.M + c * 16) = *(const uint4 *)(const void *)(sh + r * YLD + c * 16);
        }
        __syncthreads(); /* the tile is stored: the next halo may land */
    }
#else
    (void)x, (void)w, (void)rq, (void)res, (void)y, (void)p;
#endif
}

/* Whether the halo form takes the layer (besides kc_qconv_wg's checks: C 64, M <= 64, 3x3,
 * strides and dilations 1, the output the padded input's size less 2), and its launch: as many
 * blocks as the device holds at once, or one a tile */
static inline bool kc_qhalo(cudaStream_t s, const uint8_t *x, const int8_t *w, const int32_t *rq,
                            const uint8_t *r, uint8_t *y, const KcQConv *p) {
    if (!KC_QHALO || p->C != 64 || p->M > 64 || p->R != 3 || p->S != 3 || p->sh != 1 || p->sw != 1 ||
        p->dh != 1 || p->dw != 1 || p->OW != p->W + 2 * p->pw - 2 || p->OH != p->H + 2 * p->ph - 2 ||
        kc_qhalo_smem(p->W + 2 * p->pw) > 100 * 1024)
        return false;
    const int bytes = kc_qhalo_smem(p->W + 2 * p->pw);
    static int last = 0; /* the bytes resident was asked for */
    static int64_t resident = 1;
    if (bytes != last) {
        int sms;
        resident = kc_qresident(kc_qhalo_kernel, 256, (size_t)bytes, &sms);
        if (resident < 1) resident = 1;
        last = bytes;
    }
    const int64_t Wp = p->W + 2 * p->pw, tiles = (int64_t)p->N * ((p->OH * Wp + 127) / 128);
    kc_qlaunch(kc_qhalo_kernel, dim3((unsigned)(tiles < resident ? tiles : resident)), dim3(256),
               bytes, s, x, w, rq, r, y, *p);
    return true;
}

/* Whether this build holds kc_qconv_wg_kernel's code (sm_90a: its static table) and the
 * device is a Hopper */
static inline bool kc_qconv_wg_built(void) {
    static int built = -1;
    if (built < 0) {
        cudaFuncAttributes fa;
        int dev = 0, major = 0;
        built = cudaGetDevice(&dev) == cudaSuccess &&
                cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
                major == 9 && cudaFuncGetAttributes(&fa, kc_qconv_wg_kernel<128, 64, 4>) == cudaSuccess &&
                fa.sharedSizeBytes > 0;
    }
    return built > 0;
}

/* KC_QWG, changeable at run time (tests/cuda/qconv_gpu.cu times both kernels on a shape) */
static inline int &kc_qwg_mode() {
    static int v = KC_QWG;
    return v;
}

template <int BM, int BN, int ST>
static inline void kc_qconv_wg_launch(cudaStream_t s, const uint8_t *x, const int8_t *w,
                                      const int32_t *rq, const uint8_t *r, uint8_t *y,
                                      const KcQConv *p, int64_t P) {
    typedef KcQwSmem<BM, BN, ST> Sm;
    static bool opted;
    if (!opted) {
        cudaFuncSetAttribute(kc_qconv_wg_kernel<BM, BN, ST>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             Sm::BYTES);
        opted = true;
    }
    dim3 grid((unsigned)((p->M + BN - 1) / BN), (unsigned)((P + BM - 1) / BM));
    kc_qlaunch(kc_qconv_wg_kernel<BM, BN, ST>, grid, dim3(BM / 64 * 128), Sm::BYTES, s, x, w, rq, r,
               y, *p);
}

/* ---- the tensor-copy form (sm_90a; KC_QTMA: 3 by default, 0 leaves it out; measured in
 * bench/gpu/tma_qconv_lab.cu and bench/gpu/int8_ab.sh; docs/cuda.md) ----
 * The wgmma form's product with both operands brought by the tensor memory accelerator. A
 * block's tile is whole output rows -- TR rows of one image, or NB whole images where an image
 * has at most 128 pixels -- so one tap's A for one 128-byte channel slice is one box of the
 * NHWC input seen as the 4-d tensor (C, W, H, N): it starts at (c0, s dw - pw, oy0 sh - ph +
 * r dh, n0), walks W and H with the convolution's strides as the map's element strides, and
 * lands in the 128-byte swizzle wgmma reads; the padding is the copy's out-of-bounds zero fill,
 * so the form takes inputs whose zero point is 0. A 1x1 layer of unit stride without padding
 * is seen flat instead, X as the (C, P) matrix in tiles of 128 pixels (no row left unused).
 * B is W (M, Kp) as a 2-d tensor. Rows of the 128-row tile past the box's pixels are computed
 * from stale shared memory and not stored. */
#ifndef KC_QTMA
#define KC_QTMA 3
#endif
#if KC_QTMA
#include <cuda.h>
#include <cudaTypedefs.h>

static __device__ __forceinline__ __attribute__((unused)) uint32_t kc_qtma_sa(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}
static __device__ __forceinline__ __attribute__((unused)) void kc_qtma_mbar_init(uint64_t *b,
                                                                                 unsigned count) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(kc_qtma_sa(b)), "r"(count)
                 : "memory");
#endif
}
/* the calling thread's arrival, announcing `bytes` of copies that complete on b */
static __device__ __forceinline__ __attribute__((unused)) void kc_qtma_mbar_expect(uint64_t *b,
                                                                                   unsigned bytes) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(kc_qtma_sa(b)),
                 "r"(bytes)
                 : "memory");
#endif
}
/* until the phase of parity `parity` of b has completed (the retry loop inside the asm) */
static __device__ __forceinline__ __attribute__((unused)) void kc_qtma_mbar_wait(uint64_t *b,
                                                                                 unsigned parity) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("{\n.reg .pred p;\nKC_QTMA_WAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 "@!p bra KC_QTMA_WAIT;\n}\n" ::"r"(kc_qtma_sa(b)),
                 "r"(parity)
                 : "memory");
#endif
}
static __device__ __forceinline__ __attribute__((unused)) void
kc_qtma_copy2(void *dst, const CUtensorMap *m, uint64_t *bar, int c0, int c1) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(kc_qtma_sa(dst)),
                 "l"((uint64_t)(uintptr_t)m), "r"(c0), "r"(c1), "r"(kc_qtma_sa(bar))
                 : "memory");
#endif
}
static __device__ __forceinline__ __attribute__((unused)) void
kc_qtma_copy4(void *dst, const CUtensorMap *m, uint64_t *bar, int c0, int c1, int c2, int c3) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(kc_qtma_sa(dst)),
                 "l"((uint64_t)(uintptr_t)m), "r"(c0), "r"(c1), "r"(c2), "r"(c3),
                 "r"(kc_qtma_sa(bar))
                 : "memory");
#endif
}

/* ---- the kernels ---- */
/* A block's tile (blockIdx.y): its first pixel m0, the end of its valid pixels pend (whole
 * rows: contiguous in y), and the input coordinates (x, y, image) of its box before the tap's
 * offset. TR 0: the flat view of a 1x1 unit-stride layer without padding -- X as the (C, P)
 * matrix, 128 consecutive pixels a tile -- else TR rows of one image or NB whole images. */
struct KcQtmaTile {
    int cx, cy, cn;
    int32_t m0, pend;
    __device__ __forceinline__ KcQtmaTile(const KcQConv &p, int TR, int NB, int tpi) {
        if (!TR) {
            m0 = (int32_t)blockIdx.y * 128, pend = min(m0 + 128, p.N * p.OH * p.OW);
            cx = m0, cy = 0, cn = 0;
            return;
        }
        const int img0 = (int)(blockIdx.y / tpi) * NB, oy0 = (int)(blockIdx.y % tpi) * TR;
        m0 = (img0 * p.OH + oy0) * p.OW;
        pend = m0 + (NB > 1 ? min(NB, p.N - img0) * p.OH : min(TR, p.OH - oy0)) * p.OW;
        cx = -p.pw, cy = oy0 * p.sh - p.ph, cn = img0;
    }
    /* the bytes a stage's copies bring: the box of X (128 pixels flat) and the B tile */
    static __device__ __forceinline__ unsigned bytes(const KcQConv &p, int TR, int NB, int bn) {
        return (unsigned)((TR ? p.OW * TR * NB : 128) * KC_QWG_BK + bn * KC_QWG_BK);
    }
};

/* X's slices, issued in order by one thread: the next one's channel slice, tap column and tap
 * row as a cursor (dividing the slice index took about a hundred instructions) */
struct KcQtmaCursor {
    int c = 0, s = 0, r = 0;
    __device__ __forceinline__ void copy(void *dst, const CUtensorMap *tx, uint64_t *bar,
                                         const KcQConv &p, const KcQtmaTile &t) {
        kc_qtma_copy4(dst, tx, bar, c * KC_QWG_BK, t.cx + s * p.dw, t.cy + r * p.dh, t.cn);
        if (++c == p.C / KC_QWG_BK) {
            c = 0;
            if (++s == p.S) s = 0, r++;
        }
    }
};

/* Thread 0 issues each slice's copies ST - 2 slices ahead, after a block barrier that frees
 * the stage (every warpgroup's group of slice kt - 2 has completed) */
template <int BN, int ST>
__global__ void __launch_bounds__(256, 1)
    kc_qconv_tma_kernel(const __grid_constant__ CUtensorMap tx,
                        const __grid_constant__ CUtensorMap tw, const int32_t *__restrict__ rq,
                        const uint8_t *__restrict__ res, uint8_t *__restrict__ y, KcQConv p, int TR,
                        int NB, int tpi) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    enum { BM = 128, BK = KC_QWG_BK, A_BYTES = BM * BK, B_BYTES = BN * BK };
    __shared__ int4 tab[BN / 2 * 3];
    __shared__ uint64_t full[ST];
    extern __shared__ unsigned char kc_qtma_raw[];
    uint8_t *const sa = (uint8_t *)(void *)kc_wg_smem_base(kc_qtma_raw);
    uint8_t *const sb = sa + ST * A_BYTES;
    const int tid = threadIdx.x, wg = tid / 128, n0 = blockIdx.x * BN;
    const KcQtmaTile t(p, TR, NB, tpi);
    const int KT = p.R * p.S * (p.C / BK);
    const unsigned tx_bytes = KcQtmaTile::bytes(p, TR, NB, BN);
    KcQtmaCursor cur;
    auto issue_w = [&](int kt) {
        kc_qtma_mbar_expect(&full[kt % ST], tx_bytes);
        kc_qtma_copy2(sb + (kt % ST) * B_BYTES, &tw, &full[kt % ST], kt * BK, n0);
    };
    if (tid == 0) {
        for (int s = 0; s < ST; s++)
            kc_qtma_mbar_init(&full[s], 1);
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
            cur.copy(sa + kt * A_BYTES, &tx, &full[kt], p, t);
    int32_t acc[BN / 2]; /* written first by the first slice's wgmma (scale-d 0) */
    for (int kt = 0; kt < KT; kt++) {
        kc_qtma_mbar_wait(&full[kt % ST], (unsigned)(kt / ST) & 1u);
        __syncthreads(); /* every warpgroup is done with slice kt - 2: its stage is free */
        const int next = kt + ST - 2;
        if (tid == 0 && next < KT) {
            issue_w(next);
            cur.copy(sa + (next % ST) * A_BYTES, &tx, &full[next % ST], p, t);
        }
        kc_qwg_slice<BN>(acc, sa + (kt % ST) * A_BYTES + wg * 64 * BK, sb + (kt % ST) * B_BYTES,
                          kt == 0);
    }
    kc_qwg_wait<0, BN / 2>(acc);
    kc_qwg_tail<128, BN, 256>(acc, form, tab, res, y, p, n0, t.m0, t.pend, sa, true);
#else
    (void)tx, (void)tw, (void)rq, (void)res, (void)y, (void)p, (void)TR, (void)NB, (void)tpi;
#endif
}

/* The same product warp-specialized: a ninth warp issues the copies (its lane 0), up to ST
 * slices ahead, each stage's reuse gated by an "empty" mbarrier that the eight multiplying
 * warps arrive on once their wgmma group of that stage has completed (one wgmma group behind),
 * so that the loop has no block-wide barrier. The copying warp takes part only in the
 * epilogue's barriers. */
template <int BN, int ST>
__global__ void __launch_bounds__(288, 1)
    kc_qconv_tma_ws_kernel(const __grid_constant__ CUtensorMap tx,
                           const __grid_constant__ CUtensorMap tw, const int32_t *__restrict__ rq,
                           const uint8_t *__restrict__ res, uint8_t *__restrict__ y, KcQConv p,
                           int TR, int NB, int tpi) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    enum { BM = 128, BK = KC_QWG_BK, A_BYTES = BM * BK, B_BYTES = BN * BK };
    __shared__ int4 tab[BN / 2 * 3];
    __shared__ uint64_t full[ST], empty[ST];
    extern __shared__ unsigned char kc_qtma_raw[];
    uint8_t *const sa = (uint8_t *)(void *)kc_wg_smem_base(kc_qtma_raw);
    uint8_t *const sb = sa + ST * A_BYTES;
    const int tid = threadIdx.x, wg = tid / 128, lane = tid % 32, n0 = blockIdx.x * BN;
    const KcQtmaTile t(p, TR, NB, tpi);
    const int KT = p.R * p.S * (p.C / BK);
    const unsigned tx_bytes = KcQtmaTile::bytes(p, TR, NB, BN);
    if (tid == 0) {
        for (int s = 0; s < ST; s++)
            kc_qtma_mbar_init(&full[s], 1), kc_qtma_mbar_init(&empty[s], 8);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    const int form = kc_q1tab_make(tab, rq, res, p, n0, BN / 2);
    int32_t acc[BN / 2];
    /* the warpgroup's role, uniform to the compiler (a shuffle from lane 0): 0 and 1 multiply,
     * 2 (the ninth warp) copies */
    const int role = __shfl_sync(0xffffffffu, tid / 128, 0);
    if (role == 2 && lane == 0) { /* the copying warp's lane 0 */
        const int pre = min(ST, KT);
        for (int kt = 0; kt < pre; kt++) { /* the weights: constant, before the wait */
            kc_qtma_mbar_expect(&full[kt], tx_bytes);
            kc_qtma_copy2(sb + kt * B_BYTES, &tw, &full[kt], kt * BK, n0);
        }
        kc_pdl_sync();
        KcQtmaCursor cur;
        for (int kt = 0; kt < KT; kt++) {
            const int b = kt % ST;
            if (kt >= pre) {
                kc_qtma_mbar_wait(&empty[b], (unsigned)(kt / ST - 1) & 1u);
                kc_qtma_mbar_expect(&full[b], tx_bytes);
                kc_qtma_copy2(sb + b * B_BYTES, &tw, &full[b], kt * BK, n0);
            }
            cur.copy(sa + b * A_BYTES, &tx, &full[b], p, t);
        }
    } else if (role < 2) {
        kc_pdl_sync();
        for (int kt = 0; kt < KT; kt++) {
            kc_qtma_mbar_wait(&full[kt % ST], (unsigned)(kt / ST) & 1u);
            kc_qwg_slice<BN>(acc, sa + (kt % ST) * A_BYTES + wg * 64 * BK,
                              sb + (kt % ST) * B_BYTES, kt == 0);
            /* slice kt - 1's group has completed: its stage is free */
            if (kt > 0 && lane == 0)
                asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(
                                 kc_qtma_sa(&empty[(kt - 1) % ST]))
                             : "memory");
        }
        kc_qwg_wait<0, BN / 2>(acc);
    }
    kc_qwg_tail<128, BN, 256>(acc, form, tab, res, y, p, n0, t.m0, t.pend, sa, role < 2);
#else
    (void)tx, (void)tw, (void)rq, (void)res, (void)y, (void)p, (void)TR, (void)NB, (void)tpi;
#endif
}

/* ---- the host side: tensor maps, the tile, the launch ---- */
/* the driver's tensor-map encoder through the runtime (no -lcuda), or NULL */
static inline PFN_cuTensorMapEncodeTiled_v12000 kc_qtma_encode(void) {
    static PFN_cuTensorMapEncodeTiled_v12000 f;
    static bool asked;
    if (!asked) {
        void *fn = NULL;
        cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
        cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                                         cudaEnableDefault, &q);
#else
        cudaError_t e =
            cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &fn, cudaEnableDefault, &q);
#endif
        f = e == cudaSuccess && q == cudaDriverEntryPointSuccess
                ? (PFN_cuTensorMapEncodeTiled_v12000)fn
                : NULL;
        asked = true;
    }
    return f;
}

struct KcQtmaPlan {
    CUtensorMap tx, tw;
    int TR, NB, tpi, bn, st, ws;
    dim3 grid;
    size_t smem;
};

static size_t kc_qtma_smem(int bn, int st) { return (size_t)st * (128 * 128 + bn * 128) + 1024; }

/* Whether a 1x1 layer of unit stride without padding: its X is the (C, P) matrix */
static inline bool kc_qtma_flat(const KcQConv &p) {
    return p.R == 1 && p.S == 1 && p.sh == 1 && p.sw == 1 && p.ph == 0 && p.pw == 0;
}

/* false where the form does not take the layer (why in *why) */
static bool kc_qtma_plan(KcQtmaPlan &L, const uint8_t *x, const int8_t *w, const KcQConv &p, int bn,
                         int st, int ws, const char **why) {
    const bool flat = kc_qtma_flat(p);
    const int64_t P = (int64_t)p.N * p.OH * p.OW;
    *why = NULL;
    if (p.C % 128)
        *why = "C not in 128s";
    else if (p.x_zp)
        *why = "input zero point not 0";
    else if (p.M % 16)
        *why = "M not in 16s";
    else if (p.Kp != p.R * p.S * p.C)
        *why = "padded reduction";
    else if (!flat && (p.OW > 128 || p.OW * p.sw > 256 || p.sw > 8 || p.sh > 8))
        *why = "row too wide";
    else if (flat && (P + 127) / 128 > 65535)
        *why = "too many tiles";
    else if (!kc_qtma_encode())
        *why = "no tensor-map encoder";
    if (*why) return false;
    if (flat) {
        L.TR = 0, L.NB = 1, L.tpi = 1;
    } else {
        const int trmax = 128 / p.OW;
        if (trmax >= p.OH) {
            L.TR = p.OH, L.NB = 128 / (p.OH * p.OW) < p.N ? 128 / (p.OH * p.OW) : p.N, L.tpi = 1;
        } else {
            const int t = (p.OH + trmax - 1) / trmax;
            L.TR = (p.OH + t - 1) / t, L.NB = 1, L.tpi = (p.OH + L.TR - 1) / L.TR;
        }
        if (L.TR * p.sh > 256) return *why = "tile too tall", false;
    }
    /* flat: (C, P, 1, 1) in boxes of 128 pixels; else (C, W, H, N) in boxes of the tile's rows */
    const cuuint64_t xd[4] = {(cuuint64_t)p.C, flat ? (cuuint64_t)P : (cuuint64_t)p.W,
                              flat ? 1 : (cuuint64_t)p.H, flat ? 1 : (cuuint64_t)p.N};
    const cuuint64_t xs[3] = {(cuuint64_t)p.C, xd[1] * p.C, xd[1] * xd[2] * p.C};
    const cuuint32_t xb[4] = {128, flat ? 128 : (cuuint32_t)(p.OW * p.sw),
                              flat ? 1 : (cuuint32_t)(L.TR * p.sh), (cuuint32_t)L.NB};
    const cuuint32_t xe[4] = {1, (cuuint32_t)p.sw, (cuuint32_t)p.sh, 1};
    CUresult r =
        kc_qtma_encode()(&L.tx, CU_TENSOR_MAP_DATA_TYPE_UINT8, 4, (void *)x, xd, xs, xb, xe,
                         CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                         CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) return *why = "encoding X's map failed", false;
    const cuuint64_t wd[2] = {(cuuint64_t)p.Kp, (cuuint64_t)p.M};
    const cuuint64_t wstr[1] = {(cuuint64_t)p.Kp};
    const cuuint32_t wb[2] = {128, (cuuint32_t)bn}, we[2] = {1, 1};
    r = kc_qtma_encode()(&L.tw, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, (void *)w, wd, wstr, wb, we,
                         CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                         CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) return *why = "encoding W's map failed", false;
    L.bn = bn, L.st = st, L.ws = ws;
    L.grid = dim3((unsigned)((p.M + bn - 1) / bn),
                  flat ? (unsigned)((P + 127) / 128) : (unsigned)((p.N + L.NB - 1) / L.NB * L.tpi));
    L.smem = kc_qtma_smem(bn, st);
    return true;
}

template <int BN, int ST, int WS>
static void kc_qtma_launch_t(cudaStream_t s, const KcQtmaPlan &L, const int32_t *rq,
                             const uint8_t *res, uint8_t *y, const KcQConv &p) {
    static bool opted;
    if (!opted) { /* the kernels by name: tests/cuda/pdl_waits.py reads the launches */
        if constexpr (WS)
            cudaFuncSetAttribute(kc_qconv_tma_ws_kernel<BN, ST>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, (int)L.smem);
        else
            cudaFuncSetAttribute(kc_qconv_tma_kernel<BN, ST>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, (int)L.smem);
        opted = true;
    }
    if constexpr (WS)
        kc_qlaunch(kc_qconv_tma_ws_kernel<BN, ST>, L.grid, dim3(288), L.smem, s, L.tx, L.tw, rq,
                   res, y, p, L.TR, L.NB, L.tpi);
    else
        kc_qlaunch(kc_qconv_tma_kernel<BN, ST>, L.grid, dim3(256), L.smem, s, L.tx, L.tw, rq, res,
                   y, p, L.TR, L.NB, L.tpi);
}

/* the instantiated variants (bench/gpu/tma_qconv_lab.cu times each): BN, ST, warp-specialized */
#define KC_QTMA_VARIANT(BN, ST, WS)                                                                \
    if (L.bn == BN && L.st == ST && L.ws == WS)                                                    \
    return kc_qtma_launch_t<BN, ST, WS>(s, L, rq, res, y, p), true

/* false for a variant not instantiated here: KC_QTMA_ALL (bench/gpu/tma_qconv_lab.cu) builds
 * the ones only the lab times */
static bool kc_qtma_launch(cudaStream_t s, const KcQtmaPlan &L, const int32_t *rq,
                           const uint8_t *res, uint8_t *y, const KcQConv &p) {
    KC_QTMA_VARIANT(128, 3, 0);
    KC_QTMA_VARIANT(64, 4, 0);
    KC_QTMA_VARIANT(128, 4, 1);
    KC_QTMA_VARIANT(64, 4, 1);
#ifdef KC_QTMA_ALL
    KC_QTMA_VARIANT(128, 4, 0);
    KC_QTMA_VARIANT(128, 6, 1);
#endif
    return false;
}

/* KC_QTMA's form, changeable at run time: 1 the first kernel (BN 128 in three stages, BN 64 in
 * four where M < 128) on every layer it takes, 2 the warp-specialized one (BN 128 or 64, four
 * stages) likewise, 3 (the default) the rule of kc_qconv_tma */
static inline int &kc_qtma_mode() {
    static int v = KC_QTMA;
    return v;
}

/* Whether the tensor-copy form takes the layer, and its launch. The rule of mode 3, from
 * H200 runs of ResNet-50 INT8 (docs/cuda.md, 2026-12-01): where the layer has fewer blocks
 * than the device has multiprocessors (batch 1: 1-28 blocks a layer) the warp-specialized
 * kernel, which keeps ST slices in flight (batch 1: 0.407 -> 0.317 ms with it on every layer,
 * 0.348 with the first kernel); else the first kernel, a tile costing about 0.72-0.83 of the
 * wgmma form's, except on strided 1x1 layers whose row tiles fill less than 7/8 of their 128
 * rows (two of 14 x 14 rows in a 196-pixel image: 0.77; those lost 5-8 %). */
static inline bool kc_qconv_tma(cudaStream_t s, const uint8_t *x, const int8_t *w,
                                const int32_t *rq, const uint8_t *r, uint8_t *y, const KcQConv *p) {
    static int sms = -1;
    const int mode = kc_qtma_mode(), bn = p->M >= 128 ? 128 : 64;
    if (mode < 1 || mode > 3) return false;
    KcQtmaPlan L;
    const char *why;
    if (!kc_qtma_plan(L, x, w, *p, bn, mode == 1 && bn == 128 ? 3 : 4, mode == 2, &why))
        return false;
    if (mode == 3) {
        if (sms < 0) {
            int dev = 0;
            if (cudaGetDevice(&dev) != cudaSuccess ||
                cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
                sms = 0;
        }
        const int64_t P = (int64_t)p->N * p->OH * p->OW, tiles = L.grid.y;
        L.ws = (int64_t)L.grid.x * tiles < sms;
        if (!L.ws && p->R * p->S == 1 && !kc_qtma_flat(*p) && P * 8 < tiles * 128 * 7)
            return false;
        L.st = L.ws || bn == 64 ? 4 : 3, L.smem = kc_qtma_smem(bn, L.st);
    }
    return kc_qtma_launch(s, L, rq, r, y, *p);
}

#endif /* KC_QTMA */

/* Whether the wgmma form takes the layer, and its launch: 128 x 128 tiles in three stages
 * where M >= 128, else 128 x 64 in four (96 KB either way: two blocks an SM) */
static inline bool kc_qconv_wg(cudaStream_t s, const uint8_t *x, const int8_t *w, const int32_t *rq,
                               const uint8_t *r, uint8_t *y, const KcQConv *p, int64_t P) {
    if (!kc_qwg_mode() || p->C % 16 || p->M % 16 || p->R * p->S > 32 || (P + 127) / 128 > 65535 ||
        (int64_t)p->N * p->H * p->W * p->C >= ((int64_t)1 << 31) ||
        (((uintptr_t)x | (uintptr_t)w | (uintptr_t)y | (uintptr_t)r) & 15) || !kc_qconv_wg_built())
        return false;
    if (kc_qhalo(s, x, w, rq, r, y, p)) return true;
#if KC_QTMA
    if (kc_qconv_tma(s, x, w, rq, r, y, p)) return true;
#endif
    /* the mode-2 knob aside, 1x1 layers reach here only past the 1x1 form's reductions */
    if (p->M >= 128) kc_qconv_wg_launch<128, 128, 3>(s, x, w, rq, r, y, p, P);
    else kc_qconv_wg_launch<128, 64, 4>(s, x, w, rq, r, y, p, P);
    return true;
}

/* The column tile: 128 channels (eight warps) where the layer has that many and KC_QBN_MAX
 * allows, else 64. KC_QBN_MAX 64 (an A/B knob, like KC_QSTAGES): four blocks of four warps
 * an SM instead of two of eight (128 registers a thread either way), each A tile loaded
 * twice as often. */
#ifndef KC_QBN_MAX
#define KC_QBN_MAX 128
#endif
#ifndef KC_QBN_WAVE
#define KC_QBN_WAVE 0
#endif
/* KC_QWIDE: 256-pixel row tiles for the cp.async kernel's 64-channel column tiles (eight warps
 * of 64 x 32, two blocks an SM -- 16 warps against 12 for three blocks of 128 x 64 -- the B
 * tile and a block's setup, pipeline fill and barriers shared by twice the pixels) where the
 * layer still gives KC_QWIDE_MIN blocks; 1: the layers of M < 128 (ResNet-50's layer1 3x3),
 * 2: every layer of the kernel, on 64-channel tiles (an A/B knob), 0: off. H200 ResNet-50
 * INT8 batch 256, one call, two rounds: 7.596 / 7.599 ms (off) -> 7.499 / 7.492 (1); 2 lost
 * (7.760 / 7.752). KC_QST64: stages of the 128 x 64 tile (3: four blocks an SM; 7.570 /
 * 7.579 with KC_QWIDE 0). */
#ifndef KC_QWIDE
#define KC_QWIDE 1
#endif
#ifndef KC_QWIDE_MIN
#define KC_QWIDE_MIN 1024
#endif
#ifndef KC_QST64
#define KC_QST64 KC_QSTAGES
#endif
/* the block count from which KC_QWIDE applies (tests/cuda/qconv_gpu.cu lowers it to reach the
 * 256-pixel tiles on shapes its host reference can afford) */
static inline int64_t &kc_qwide_min() {
    static int64_t v = KC_QWIDE_MIN;
    return v;
}
template <int VW>
static inline void kc_qconv_launch(cudaStream_t s, dim3 grid, int bn, const uint8_t *x,
                                   const int8_t *w, const int32_t *rq, const uint8_t *r, uint8_t *y,
                                   const KcQConv *p) {
    KcQF32In none = {NULL, NULL, NULL};
    if (bn == 128)
        kc_qlaunch(kc_qconv_mma_kernel<VW, 128>, grid, dim3(256), 0, s, x, w, rq, r, y, *p, none);
    else
        kc_qlaunch(kc_qconv_mma_kernel<VW, 64>, grid, dim3(128), 0, s, x, w, rq, r, y, *p, none);
}

/* The stem form (C 1..4, M 32 or 64, no residual, no dilation, a window of at most 8 x 8
 * taps: an RGB 7x7 first layer), built as kc_stem_tc: a block stages the window of
 * KC_QSTEM_ROWS output rows of one image once in shared memory, one 32-bit word a pixel (its
 * C bytes, zeros above C; the padding pixels x_zp in each of the C bytes), and the weights
 * once for all its row groups, each tap row ky as 32 bytes (kx 0..7 x 4 channels, zeros past
 * S and C). The reduction then runs as R steps of k 32 where step ky's A row for pixel ox is
 * the 32 contiguous bytes of window row (row * sh + ky) from pixel ox * sw: every fragment
 * register is one aligned 32-bit shared load, with no gather, table or division in the loop
 * (the table-gather kernel above re-reads each input byte for every tap that covers it and
 * builds its A tile through registers). The zero weights take the padded channels and the
 * eighth column, so the int32 sums are the reference's exactly; the epilogue is kc_qepi_quad
 * on the block's term table (kc_q1tab_make, the bias in its k0), through a per-warp shared tile
 * out to y as 16-byte row chunks. A warp keeps the B fragments of its 32 channels (see the
 * kernel). */
#ifndef KC_QSTEM
#define KC_QSTEM 1 /* 0: the stem takes kc_qconv_mma_kernel's table gather (an A/B knob) */
#endif
#define KC_QSTEM_ROWS 8
/* A/B knobs, H200, ResNet-50's stem at batch 256 (qconv_gpu --timestem, two rounds of three),
 * the form before the warps kept their weight fragments: two tiles a warp, terms from rq, no
 * bound (167 registers) 0.535 ms; the table 0.489-0.495; one tile a warp and five blocks an SM
 * 0.461-0.465; eight warps a block, one tile, 2 / 3 / 4 blocks an SM 0.512 / 0.474 / 0.474. */
#ifndef KC_QSTEM_WARPS
#define KC_QSTEM_WARPS 4 /* warps a block */
#endif
#ifndef KC_QSTEM_MINB
#define KC_QSTEM_MINB 4 /* blocks an SM the registers allow */
#endif
#ifndef KC_QSTEM_R7
#define KC_QSTEM_R7 1 /* 7-row windows on their own instantiation (an A/B knob) */
#endif
#ifndef KC_QSTEM_RGB4
#define KC_QSTEM_RGB4 1 /* the window of a three-channel input from aligned words (an A/B knob) */
#endif

/* The window's rows and words a row, and the weights' row stride in bytes (conflict-free B
 * fragment loads: R * 32 + 16 bytes is 4 mod 8 words, whose multiples by 0..7 differ mod 32) */
static __host__ __device__ __forceinline__ void kc_qstem_geo(const KcQConv &p, int &wr, int &ww, int &wld) {
    wr = (KC_QSTEM_ROWS - 1) * p.sh + p.R;
    ww = ((p.OW + 15) / 16 * 16 - 1) * p.sw + 8;
    wld = p.R * 32 + 16;
}

/* a warp's output channels in kc_qstem_kernel (32: four 8-channel mma tiles; 16: two), and
 * the row stride of its output tile (48 bytes: 12 words, conflict-free 16-bit stores) */
#ifndef KC_QSTEM_WN
#define KC_QSTEM_WN 32
#endif
#define KC_QSTEM_YLD 48

/* where kc_qstem_kernel's output tiles start: after the window or the weights before it (the
 * larger), which share the buffer's start */
static __host__ __device__ __forceinline__ size_t kc_qstem_ys(int wr, int ww, int wld, int bn) {
    size_t win = ((size_t)wr * ww * 4 + 15) / 16 * 16, wts = ((size_t)bn * wld + 15) / 16 * 16;
    return win > wts ? win : wts;
}

/* shared-memory bytes of kc_qstem_kernel<NT> for p: the window (the weights before it, until
 * the warps hold their fragments) and the warps' output tiles */
static inline size_t kc_qstem_smem(const KcQConv &p, int NT) {
    int wr, ww, wld;
    kc_qstem_geo(p, wr, ww, wld);
    return kc_qstem_ys(wr, ww, wld, NT * 8) + KC_QSTEM_WARPS * 16 * KC_QSTEM_YLD;
}

/* RT: the window's rows R as a constant (7: ResNet's stems; the tap loop unrolled, the weight
 * fragments' offsets immediate), or 0: p.R. A warp owns KC_QSTEM_WN of the BN channels (BN / WN
 * parts, the warps split among them) and keeps their B fragments for every tap row in registers
 * (R x WN / 8 x 2 words, loaded once a block), so a 16-pixel tile's tap row costs four window
 * loads and WN / 8 mma.sync where the whole-row form reloaded sixteen fragment words too. */
template <int NT, int RT = 0>
__global__ void __launch_bounds__(KC_QSTEM_WARPS * 32, KC_QSTEM_MINB)
kc_qstem_kernel(const uint8_t *__restrict__ x, const int8_t *__restrict__ w,
                const int32_t *__restrict__ rq, uint8_t *__restrict__ y, KcQConv p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    extern __shared__ __align__(16) unsigned char kc_qstem_buf[];
    enum { ROWS = KC_QSTEM_ROWS, THREADS = KC_QSTEM_WARPS * 32, BN = NT * 8 };
    enum { WT = KC_QSTEM_WN / 8, PARTS = NT / WT, WP = KC_QSTEM_WARPS / PARTS, RR = RT ? RT : 8 };
    enum { YLD = KC_QSTEM_YLD };
    static_assert(NT % WT == 0 && KC_QSTEM_WARPS % PARTS == 0, "stem: warps and channel parts");
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, tig = lane & 3;
    const int part = warp % PARTS, wi = warp / PARTS, cw = part * KC_QSTEM_WN;
    int WR, WW, WLD;
    kc_qstem_geo(p, WR, WW, WLD);
    const int R = RT ? RT : p.R;
    if (RT) WLD = RT * 32 + 16;
    const int MT = (p.OW + 15) / 16, sh = p.sh, sw = p.sw;
    uint32_t *win = (uint32_t *)(void *)kc_qstem_buf;
    uint8_t *wsm = kc_qstem_buf; /* the weights, where the first window goes once the warps hold them */
    uint8_t *ys = kc_qstem_buf + kc_qstem_ys(WR, WW, WLD, BN) + warp * 16 * YLD;
    /* the weights, word (n, ky, kx) = channels 0..3 of tap (ky, kx) of output channel n */
    const int KW4 = R * 8;
    for (int i = tid; i < BN * KW4; i += THREADS) {
        int n = i / KW4, q = i - n * KW4, ky = q >> 3, kx = q & 7;
        uint32_t v = 0;
        if (n < p.M && kx < p.S)
            for (int c = 0; c < p.C; c++)
                v |= (uint32_t)(uint8_t)w[(size_t)n * p.Kp + (ky * p.S + kx) * p.C + c] << (8 * c);
        *(uint32_t *)(void *)(wsm + n * WLD + q * 4) = v;
    }
    const uint32_t zw = (uint32_t)p.x_zp * (0xffffffffu >> (32 - 8 * p.C) & 0x01010101u);
    __shared__ int4 tab[BN / 2 * 3];
    const int form = kc_q1tab_make(tab, rq, NULL, p, 0, BN / 2); /* its barriers: the weights in */
    /* this warp's B fragments, every tap row (rows past R: never used) */
    uint32_t bf[RR][WT][2];
#pragma unroll
    for (int ky = 0; ky < RR; ky++)
#pragma unroll
        for (int nt = 0; nt < WT; nt++) {
            const uint8_t *wb = wsm + (cw + nt * 8 + g) * WLD + (ky < R ? ky : 0) * 32 + tig * 4;
            bf[ky][nt][0] = *(const uint32_t *)(const void *)wb;
            bf[ky][nt][1] = *(const uint32_t *)(const void *)(wb + 16);
        }
    kc_pdl_sync();
    const int ohg = (p.OH + ROWS - 1) / ROWS, groups = p.N * ohg;
    /* RGB rows in whole words (C 3, W in 4s, X on 4 bytes): the window filled from aligned
     * 32-bit loads, where the byte loads took three loads and about fifty instructions a pixel */
    const bool rgb4 = KC_QSTEM_RGB4 && p.C == 3 && (p.W & 3) == 0 && ((uintptr_t)x & 3) == 0;
    for (int grp = blockIdx.x; grp < groups; grp += gridDim.x) {
        const int img = grp / ohg, oy0 = (grp - img * ohg) * ROWS, iy0 = oy0 * sh - p.ph;
        __syncthreads(); /* the last group's window read (the first: every warp has its fragments) */
        if (rgb4) { /* a row's pixels four at a time from three aligned words, then the padding */
            const int NQ = p.W >> 2;
            for (int i = tid; i < WR * NQ; i += THREADS) {
                const int r = i / NQ, q = i - r * NQ, iy = iy0 + r, j = 4 * q + p.pw;
                uint32_t v[4] = {zw, zw, zw, zw};
                if ((unsigned)iy < (unsigned)p.H) {
                    const uint32_t *src = (const uint32_t *)(const void *)(x + ((size_t)(img * p.H + iy) * p.W + 4 * q) * 3);
                    const uint32_t a = __ldg(src), b = __ldg(src + 1), c = __ldg(src + 2);
                    v[0] = a & 0xffffffu, v[1] = __funnelshift_r(a, b, 24) & 0xffffffu;
                    v[2] = __funnelshift_r(b, c, 16) & 0xffffffu, v[3] = c >> 8;
                }
                uint32_t *d = win + r * WW + j;
#pragma unroll
                for (int k = 0; k < 4; k++)
                    if (j + k < WW) d[k] = v[k];
            }
            const int NL = p.pw < WW ? p.pw : WW, NR = WW - p.pw - p.W > 0 ? WW - p.pw - p.W : 0;
            for (int i = tid; i < WR * (NL + NR); i += THREADS) {
                const int r = i / (NL + NR), k = i - r * (NL + NR);
                win[r * WW + (k < NL ? k : p.pw + p.W + (k - NL))] = zw;
            }
        } else {
            for (int i = tid; i < WR * WW; i += THREADS) {
                int r = i / WW, j = i - r * WW, iy = iy0 + r, ix = j - p.pw;
                uint32_t v = zw;
                if ((unsigned)iy < (unsigned)p.H && (unsigned)ix < (unsigned)p.W) {
                    const uint8_t *src = x + ((size_t)(img * p.H + iy) * p.W + ix) * p.C;
                    v = src[0];
                    if (p.C > 1) v |= (uint32_t)src[1] << 8;
                    if (p.C > 2) v |= (uint32_t)src[2] << 16;
                    if (p.C > 3) v |= (uint32_t)src[3] << 24;
                }
                win[i] = v;
            }
        }
        __syncthreads();
        for (int u = wi; u < ROWS * MT; u += WP) {
            const int rp = u / MT, ox0 = (u - rp * MT) * 16, oy = oy0 + rp;
            int32_t acc[WT][4] = {}; /* the bias is in the table's k0 */
            const uint32_t *a0 = win + rp * sh * WW + (ox0 + g) * sw + tig;
#pragma unroll
            for (int ky = 0; ky < RR; ky++) {
                if (!RT && ky >= R) break;
                const uint32_t *a = a0 + ky * WW;
                uint32_t af[4] = {a[0], a[8 * sw], a[4], a[8 * sw + 4]};
#pragma unroll
                for (int nt = 0; nt < WT; nt++) kc_mma_u8s8(acc[nt], af, bf[ky][nt]);
            }
            /* requantization (kc_qepi_quad), into the warp's 16 x WN tile, then out */
            __syncwarp(); /* the tile before is out */
#pragma unroll
            for (int nt = 0; nt < WT; nt++) {
                KcQPair c; /* M is BN: every pair in */
                const int cl = nt * 8 + tig * 2;
                if (form == 5) {
                    kc_q1tab_pair<5>(c, tab, cw + cl, p);
                    kc_qepi_quad<false, 5, YLD>(acc[nt], c, ys + g * YLD + cl);
                } else if (form) {
                    kc_q1tab_pair<1>(c, tab, cw + cl, p);
                    kc_qepi_quad<false, 1, YLD>(acc[nt], c, ys + g * YLD + cl);
                } else {
                    kc_q1tab_pair<0>(c, tab, cw + cl, p);
                    kc_qepi_quad<false, 0, YLD>(acc[nt], c, ys + g * YLD + cl);
                }
            }
            __syncwarp();
            if (oy < p.OH && lane < KC_QSTEM_WN) { /* 16 rows of WN / 16 16-byte chunks: one a lane */
                const int row = lane / (KC_QSTEM_WN / 16), col = (lane % (KC_QSTEM_WN / 16)) * 16, ox = ox0 + row;
                if (ox < p.OW)
                    *(uint4 *)(void *)(y + (((size_t)img * p.OH + oy) * p.OW + ox) * p.M + cw + col) =
                        *(const uint4 *)(const void *)(ys + row * YLD + col);
            }
        }
    }
#endif
}

/* the row groups from which kc_qstem takes a layer; -1: one a multiprocessor. H200,
 * ResNet-50's stem (qconv_gpu --time), kc_qstem_kernel against the table gather by batch (row
 * groups): 1 (14) 0.054 / 0.019 ms, 4 (56) 0.056 / 0.023, 16 (224) 0.063 / 0.071, 32 (448)
 * 0.105 / 0.136, 64 0.188 / 0.273, 256 (3584) 0.556 / 1.106 (batch 8 not measured).
 * tests/cuda/qconv_gpu.cu sets it to time both forms; -DKC_QSTEM_MIN=0 takes every layer
 * it can, for the bundle checks. */
#ifndef KC_QSTEM_MIN
#define KC_QSTEM_MIN -1
#endif
static inline int64_t &kc_qstem_min() {
    static int64_t v = KC_QSTEM_MIN;
    return v;
}

/* false where the layer gives fewer row groups than kc_qstem_min() */
template <int NT, int RT = 0>
static inline bool kc_qstem_launch(cudaStream_t s, const uint8_t *x, const int8_t *w,
                                   const int32_t *rq, uint8_t *y, const KcQConv *p, size_t smem) {
    /* a grid of the resident blocks, each walking row groups: the weights staged once a block */
    static size_t last = 0;
    static int64_t resident = 0;
    static int sms = 0;
    if (smem != last) {
        resident = kc_qresident(kc_qstem_kernel<NT, RT>, KC_QSTEM_WARPS * 32, smem, &sms);
        last = smem;
    }
    int64_t groups = (int64_t)p->N * ((p->OH + KC_QSTEM_ROWS - 1) / KC_QSTEM_ROWS);
    int64_t grid = resident > 0 ? resident : 1024;
    if (groups < (kc_qstem_min() >= 0 ? kc_qstem_min() : sms > 0 ? sms : 128)) return false;
    if (grid > groups) grid = groups;
    kc_qlaunch(kc_qstem_kernel<NT, RT>, dim3((unsigned)grid), dim3(KC_QSTEM_WARPS * 32), smem, s, x,
               w, rq, y, *p);
    return true;
}

/* kc_qconv by kc_qstem_kernel where that applies (see there); false: not taken */
static inline bool kc_qstem(cudaStream_t s, const uint8_t *x, const int8_t *w, const int32_t *rq,
                            const uint8_t *r, uint8_t *y, const KcQConv *p) {
    if (!KC_QSTEM || r || p->C < 1 || p->C > 4 || (p->M != 32 && p->M != 64) || p->R < 1 ||
        p->R > 8 || p->S < 1 || p->S > 8 || p->dh != 1 || p->dw != 1 || p->sh < 1 || p->sw < 1 ||
        ((uintptr_t)y & 15) != 0 || (int64_t)p->N * ((p->OH + KC_QSTEM_ROWS - 1) / KC_QSTEM_ROWS) > INT32_MAX)
        return false;
    const int NT = p->M / 8;
    size_t smem = kc_qstem_smem(*p, NT);
    if (smem > 48 * 1024) return false;
    if (KC_QSTEM_R7 && p->R == 7)
        return NT == 8 ? kc_qstem_launch<8, 7>(s, x, w, rq, y, p, smem)
                       : kc_qstem_launch<4, 7>(s, x, w, rq, y, p, smem);
    return NT == 8 ? kc_qstem_launch<8>(s, x, w, rq, y, p, smem)
                   : kc_qstem_launch<4>(s, x, w, rq, y, p, smem);
}

static inline int kc_qconv(cudaStream_t s, const uint8_t *x, const int8_t *w, const int32_t *rq,
                           const uint8_t *r, uint8_t *y, const KcQConv *p) {
    int64_t P = (int64_t)p->N * p->OH * p->OW;
    if (P <= 0 || p->M <= 0) return KC_OK;
    if (KC_Q1X1 && kc_qwg_mode() != 2 && kc_qconv1x1(s, x, w, rq, r, y, p)) {
        KC_LAUNCHED();
        return KC_OK;
    }
    if (kc_qstem(s, x, w, rq, r, y, p)) {
        KC_LAUNCHED();
        return KC_OK;
    }
    if (kc_qconv_wg(s, x, w, rq, r, y, p, P)) {
        KC_LAUNCHED();
        return KC_OK;
    }
    int bn = p->M >= 128 && KC_QBN_MAX >= 128 ? 128 : 64;
    /* KC_QBN_WAVE (an A/B knob, off): 64-channel tiles where 128-channel ones would give fewer
     * blocks than that (batch 1; on a tile-walk form of this kernel, 264 took ResNet-50 batch 1
     * from 0.885 to 0.797 ms, batch 256 unchanged; not measured on this one) */
    if (bn == 128 && (P + KC_QBM - 1) / KC_QBM * ((p->M + 127) / 128) < KC_QBN_WAVE) bn = 64;
    dim3 grid((unsigned)((P + KC_QBM - 1) / KC_QBM), (unsigned)((p->M + bn - 1) / bn));
    /* KC_QCOLS puts the row tiles in the grid's y (at most 65535: 8.4 M pixels); a larger
     * layer takes the register-staged kernel, whose row tiles are in x */
    if (p->C % 16 == 0 && ((uintptr_t)x & 15) == 0 && ((uintptr_t)w & 15) == 0 &&
        (!KC_QCOLS || grid.x <= 65535u)) {
        const int64_t rows256 = (P + 255) / 256, wide = rows256 * ((p->M + 63) / 64);
        if (KC_QWIDE && (bn == 64 || KC_QWIDE == 2) && wide >= kc_qwide_min() && rows256 <= 65535) {
            grid = dim3((unsigned)rows256, (unsigned)((p->M + 63) / 64));
            if (KC_QCOLS) grid = dim3(grid.y, grid.x);
            kc_qconv16_launch<64, 256>(s, grid, x, w, rq, r, y, p);
        } else {
            if (KC_QCOLS) grid = dim3(grid.y, grid.x);
            if (bn == 128) kc_qconv16_launch<128>(s, grid, x, w, rq, r, y, p);
            else kc_qconv16_launch<64, KC_QBM, KC_QST64>(s, grid, x, w, rq, r, y, p);
        }
    } else if (p->C % 16 == 0 && ((uintptr_t)x & 15) == 0)
        kc_qconv_launch<16>(s, grid, bn, x, w, rq, r, y, p);
    else if (p->C % 4 == 0 && ((uintptr_t)x & 3) == 0)
        kc_qconv_launch<4>(s, grid, bn, x, w, rq, r, y, p);
    else if (p->Kp <= KC_QKTAB && (p->R - 1) * p->dh < 0x4000 && (p->S - 1) * p->dw < 0x10000)
        kc_qconv_launch<0>(s, grid, bn, x, w, rq, r, y, p);
    else
        kc_qconv_launch<1>(s, grid, bn, x, w, rq, r, y, p);
    KC_LAUNCHED();
    return KC_OK;
}

/* KC_QSTEM_GATHER 0: kc_qconv_f32nchw quantizes the input into NHWC bytes in one pass
 * (kc_qnchw_kernel, each float once) and the stem runs on them as kc_qconv; 1 (an A/B knob,
 * off): in the stem's table gather (VW -1), every float quantized once for each tap that
 * reads it (12 times on a 7x7 stride-2 stem). The same bytes either way. H200, ResNet-50
 * batch 256, one call, two rounds: the stem node 1.008 ms with 0 (the pass and kc_qconv),
 * 3.83-3.86 with 1 (latency-bound: IPC 0.85, 14 cycles a warp between issues), against 0.85
 * plus the unfolded QuantizeLinear 0.16 and Transpose 0.20 before. */
#ifndef KC_QSTEM_GATHER
#define KC_QSTEM_GATHER 0
#endif

/* y (N, H, W, C) uint8 = QuantizeLinear(x (N, C, H, W) float32): one thread a pixel, its C
 * floats read across the channel planes (coalesced along W) */
__global__ void kc_qnchw_kernel(const float *__restrict__ x, const float *__restrict__ scale,
                                const uint8_t *__restrict__ zp, uint8_t *__restrict__ y,
                                int64_t pixels, int C, int64_t HW) {
    kc_pdl_sync();
    float inv, rel, z = zp ? (float)zp[0] : 0.0f;
    double s = (double)scale[0];
    kc_qquant_terms(scale[0], inv, rel);
    KC_FOR(i, pixels) {
        int64_t n = i / HW, hw = i - n * HW;
        const float *src = x + n * C * HW + hw;
        for (int c = 0; c < C; c++) y[i * C + c] = (uint8_t)kc_qquant_f32(src[c * HW], inv, rel, s, z);
    }
}

/* kc_qnchw_kernel four pixels a thread (HW % 4 == 0, x 16-byte and y 4-byte aligned; C 1..4):
 * a float4 a channel plane, the 4 C bytes stored as C words. ResNet-50's batch-256 input is
 * 154 MB in, 38.5 MB out (~0.04 ms at the H200's 4.8 TB/s); H200: 0.146 ms one pixel a
 * thread (1.32 TB/s), 0.055 four (3.52 TB/s). */
template <int C>
__global__ void kc_qnchw4_kernel(const float *__restrict__ x, const float *__restrict__ scale,
                                 const uint8_t *__restrict__ zp, uint8_t *__restrict__ y,
                                 int64_t quads, int64_t HW) {
    kc_pdl_sync();
    float inv, rel, z = zp ? (float)zp[0] : 0.0f;
    double s = (double)scale[0];
    kc_qquant_terms(scale[0], inv, rel);
    KC_FOR(q, quads) {
        int64_t n = 4 * q / HW, hw = 4 * q - n * HW;
        float4 v[C];
#pragma unroll
        for (int c = 0; c < C; c++) v[c] = *(const float4 *)(x + (n * C + c) * HW + hw);
        uint32_t wd[C] = {0};
#pragma unroll
        for (int k = 0; k < 4; k++)
#pragma unroll
            for (int c = 0; c < C; c++) {
                float f = k == 0 ? v[c].x : k == 1 ? v[c].y : k == 2 ? v[c].z : v[c].w;
                wd[(k * C + c) / 4] |= kc_qquant_f32(f, inv, rel, s, z) << (8 * ((k * C + c) % 4));
            }
        uint32_t *dst = (uint32_t *)(y + 4 * q * C);
#pragma unroll
        for (int c = 0; c < C; c++) dst[c] = wd[c];
    }
}

/* kc_qconv on a float32 NCHW input x (N, C, H, W) quantized by QuantizeLinear's scale and zero
 * point (zp NULL: 0, else zp[0] == p->x_zp): the stem whose QuantizeLinear and Transpose into
 * NHWC backend/cuda/cuda_qint8.c folds away. xq: room for the NHWC bytes (KC_QSTEM_GATHER 0;
 * the gather, 1, needs none but Kp <= KC_QKTAB). ResNet-50 batch 256 (H200): 7.786 -> 7.591
 * ms, the two nodes' 0.36 ms for 0.16 more in the stem node. */
static inline int kc_qconv_f32nchw(cudaStream_t s, const float *x, const float *scale,
                                   const uint8_t *zp, uint8_t *xq, const int8_t *w,
                                   const int32_t *rq, const uint8_t *r, uint8_t *y,
                                   const KcQConv *p) {
    int64_t P = (int64_t)p->N * p->OH * p->OW;
    if (P <= 0 || p->M <= 0) return KC_OK;
#if !KC_QSTEM_GATHER
    if (!xq) return KC_ERR_NULL;
    int64_t pixels = (int64_t)p->N * p->H * p->W, HW = (int64_t)p->H * p->W, quads = pixels / 4;
    const unsigned qb = kc_grid(quads);
    if (HW % 4 == 0 && p->C >= 1 && p->C <= 4 && (uintptr_t)x % 16 == 0 && (uintptr_t)xq % 4 == 0) {
        auto quad = [&](void (*k)(const float *, const float *, const uint8_t *, uint8_t *, int64_t,
                                  int64_t)) {
            kc_qlaunch(k, dim3(qb), dim3(KC_THREADS), 0, s, x, scale, zp, xq, quads, HW);
        };
        if (p->C == 1) quad(kc_qnchw4_kernel<1>);
        if (p->C == 2) quad(kc_qnchw4_kernel<2>);
        if (p->C == 3) quad(kc_qnchw4_kernel<3>);
        if (p->C == 4) quad(kc_qnchw4_kernel<4>);
    } else {
        kc_qlaunch(kc_qnchw_kernel, dim3(kc_grid(pixels)), dim3(KC_THREADS), 0, s, x, scale, zp, xq,
                   pixels, p->C, HW);
    }
    KC_LAUNCHED();
    return kc_qconv(s, xq, w, rq, r, y, p);
#else
    (void)xq;
    if (p->Kp > KC_QKTAB || (p->R - 1) * p->dh >= 0x4000 || (p->S - 1) * p->dw >= 0x10000)
        return KC_ERR_SHAPE;
    int bn = p->M >= 128 && KC_QBN_MAX >= 128 ? 128 : 64;
    dim3 grid((unsigned)((P + KC_QBM - 1) / KC_QBM), (unsigned)((p->M + bn - 1) / bn));
    KcQF32In fin = {x, scale, zp};
    if (bn == 128)
        kc_qlaunch(kc_qconv_mma_kernel<-1, 128>, grid, dim3(256), 0, s, (const uint8_t *)NULL, w,
                   rq, r, y, *p, fin);
    else
        kc_qlaunch(kc_qconv_mma_kernel<-1, 64>, grid, dim3(128), 0, s, (const uint8_t *)NULL, w, rq,
                   r, y, *p, fin);
    KC_LAUNCHED();
    return KC_OK;
#endif
}

/* Depthwise: one thread per output element (channels innermost, coalesced); w (R*S, C). */
__global__ void kc_qdwconv_kernel(const uint8_t *__restrict__ x, const int8_t *__restrict__ w,
                                  const int32_t *__restrict__ rq, const uint8_t *__restrict__ res,
                                  uint8_t *__restrict__ y, KcQConv p) {
    kc_pdl_sync();
    int64_t total = (int64_t)p.N * p.OH * p.OW * p.M;
    KC_FOR(i, total) {
        int c = (int)(i % p.M);
        int64_t pix = i / p.M;
        int ox = (int)(pix % p.OW), oy = (int)((pix / p.OW) % p.OH), n = (int)(pix / ((int64_t)p.OW * p.OH));
        int32_t acc = rq[c];
        for (int ky = 0; ky < p.R; ky++) {
            int iy = oy * p.sh - p.ph + ky * p.dh;
            for (int kx = 0; kx < p.S; kx++) {
                int ix = ox * p.sw - p.pw + kx * p.dw;
                int32_t xv = iy >= 0 && iy < p.H && ix >= 0 && ix < p.W
                                 ? (int32_t)x[((int64_t)(n * p.H + iy) * p.W + ix) * p.C + c]
                                 : p.x_zp;
                acc += xv * (int32_t)w[(ky * p.S + kx) * p.C + c];
            }
        }
        int32_t r = res ? (int32_t)res[i] - p.r_zp : 0;
        y[i] = kc_qrequant(acc, rq[p.M + c], rq[2 * p.M + c], r, rq[3 * p.M + c], p.y_zp, p.lo, p.hi);
    }
}

static inline int kc_qdwconv(cudaStream_t s, const uint8_t *x, const int8_t *w, const int32_t *rq,
                             const uint8_t *r, uint8_t *y, const KcQConv *p) {
    int64_t total = (int64_t)p->N * p->OH * p->OW * p->M;
    if (total <= 0) return KC_OK;
    kc_qlaunch(kc_qdwconv_kernel, dim3(kc_grid(total)), dim3(KC_THREADS), 0, s, x, w, rq, r, y, *p);
    KC_LAUNCHED();
    return KC_OK;
}

/* Max pooling on the uint8 values (rt_qmaxpool2d: 0 where no tap is inside). */
__global__ void kc_qmaxpool_kernel(const uint8_t *__restrict__ x, uint8_t *__restrict__ y, KcQConv p) {
    kc_pdl_sync();
    int64_t total = (int64_t)p.N * p.OH * p.OW * p.C;
    KC_FOR(i, total) {
        int c = (int)(i % p.C);
        int64_t pix = i / p.C;
        int ox = (int)(pix % p.OW), oy = (int)((pix / p.OW) % p.OH), n = (int)(pix / ((int64_t)p.OW * p.OH));
        uint8_t m = 0;
        for (int ky = 0; ky < p.R; ky++) {
            int iy = oy * p.sh - p.ph + ky * p.dh;
            if (iy < 0 || iy >= p.H) continue;
            for (int kx = 0; kx < p.S; kx++) {
                int ix = ox * p.sw - p.pw + kx * p.dw;
                if (ix < 0 || ix >= p.W) continue;
                uint8_t v = x[((int64_t)(n * p.H + iy) * p.W + ix) * p.C + c];
                m = v > m ? v : m;
            }
        }
        y[i] = m;
    }
}

/* The same, 16 channels a thread (C % 16 == 0, 16-byte aligned): four __vmaxu4 a tap. */
__global__ void kc_qmaxpool16_kernel(const uint4 *__restrict__ x, uint4 *__restrict__ y, KcQConv p) {
    kc_pdl_sync();
    const int CV = p.C / 16;
    int64_t total = (int64_t)p.N * p.OH * p.OW * CV;
    KC_FOR(i, total) {
        int cv = (int)(i % CV);
        int64_t pix = i / CV;
        int ox = (int)(pix % p.OW), oy = (int)((pix / p.OW) % p.OH), n = (int)(pix / ((int64_t)p.OW * p.OH));
        uint4 m = make_uint4(0, 0, 0, 0);
        for (int ky = 0; ky < p.R; ky++) {
            int iy = oy * p.sh - p.ph + ky * p.dh;
            if (iy < 0 || iy >= p.H) continue;
            for (int kx = 0; kx < p.S; kx++) {
                int ix = ox * p.sw - p.pw + kx * p.dw;
                if (ix < 0 || ix >= p.W) continue;
                uint4 v = x[((int64_t)(n * p.H + iy) * p.W + ix) * CV + cv];
                m.x = __vmaxu4(m.x, v.x), m.y = __vmaxu4(m.y, v.y);
                m.z = __vmaxu4(m.z, v.z), m.w = __vmaxu4(m.w, v.w);
            }
        }
        y[i] = m;
    }
}

/* kc_qmaxpool16_kernel on a 3x3 window (ResNet-50's pool after its stem), 32-bit indices:
 * the nine 16-byte loads of a thread issued before the first max (the loop above waits out
 * one load's latency a tap), then the same __vmaxu4 and 0 where no tap is inside. H200,
 * ResNet-50's pool at batch 256 (205 MB in, 51 MB out): 0.109 -> 0.077 ms (3.33 TB/s). */
__global__ void kc_qmaxpool16_3x3_kernel(const uint4 *__restrict__ x, uint4 *__restrict__ y,
                                         KcQConv p) {
    kc_pdl_sync();
    const int32_t CV = p.C / 16, total = p.N * p.OH * p.OW * CV;
    KC_FOR(i64, total) {
        const int32_t i = (int32_t)i64, cv = i % CV, pix = i / CV;
        const int32_t ox = pix % p.OW, oy = (pix / p.OW) % p.OH, n = pix / (p.OW * p.OH);
        uint4 v[3][3];
        bool in[3][3];
#pragma unroll
        for (int ky = 0; ky < 3; ky++)
#pragma unroll
            for (int kx = 0; kx < 3; kx++) {
                const int32_t iy = oy * p.sh - p.ph + ky * p.dh, ix = ox * p.sw - p.pw + kx * p.dw;
                in[ky][kx] = iy >= 0 && iy < p.H && ix >= 0 && ix < p.W;
                if (in[ky][kx]) v[ky][kx] = x[((n * p.H + iy) * p.W + ix) * CV + cv];
            }
        uint4 m = make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int ky = 0; ky < 3; ky++)
#pragma unroll
            for (int kx = 0; kx < 3; kx++)
                if (in[ky][kx]) {
                    m.x = __vmaxu4(m.x, v[ky][kx].x), m.y = __vmaxu4(m.y, v[ky][kx].y);
                    m.z = __vmaxu4(m.z, v[ky][kx].z), m.w = __vmaxu4(m.w, v[ky][kx].w);
                }
        y[i] = m;
    }
}

static inline int kc_qmaxpool(cudaStream_t s, const uint8_t *x, uint8_t *y, const KcQConv *p) {
    int64_t total = (int64_t)p->N * p->OH * p->OW * p->C;
    if (total <= 0) return KC_OK;
    bool vec = p->C % 16 == 0 && ((uintptr_t)x & 15) == 0 && ((uintptr_t)y & 15) == 0;
    if (vec && p->R == 3 && p->S == 3 && total < INT32_MAX &&
        (int64_t)p->N * p->H * p->W * p->C < INT32_MAX)
        kc_qlaunch(kc_qmaxpool16_3x3_kernel, dim3(kc_grid(total / 16)), dim3(KC_THREADS), 0, s,
                   (const uint4 *)(const void *)x, (uint4 *)(void *)y, *p);
    else if (vec)
        kc_qlaunch(kc_qmaxpool16_kernel, dim3(kc_grid(total / 16)), dim3(KC_THREADS), 0, s,
                   (const uint4 *)(const void *)x, (uint4 *)(void *)y, *p);
    else
        kc_qlaunch(kc_qmaxpool_kernel, dim3(kc_grid(total)), dim3(KC_THREADS), 0, s, x, y, *p);
    KC_LAUNCHED();
    return KC_OK;
}

/* Global average pooling (rt_qgavgpool): one thread per (image, channel). */
__global__ void kc_qgavg_kernel(const uint8_t *__restrict__ x, uint8_t *__restrict__ y, int64_t n,
                                int64_t hw, int64_t C, int32_t x_zp, int32_t m, int shift,
                                int32_t y_zp) {
    kc_pdl_sync();
    KC_FOR(i, n * C) {
        int64_t b = i / C, c = i % C;
        int32_t acc = 0;
        for (int64_t q = 0; q < hw; q++) acc += x[(b * hw + q) * C + c];
        int64_t t = ((int64_t)acc - hw * x_zp) * m;
        int64_t v = kc_qround_shift(t, shift) + y_zp;
        y[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
}

static inline int kc_qgavg(cudaStream_t s, const uint8_t *x, uint8_t *y, int64_t n, int64_t hw,
                           int64_t C, int32_t x_zp, int32_t m, int shift, int32_t y_zp) {
    if (n * C <= 0) return KC_OK;
    kc_qlaunch(kc_qgavg_kernel, dim3(kc_grid(n * C)), dim3(KC_THREADS), 0, s, x, y, n, hw, C, x_zp,
               m, shift, y_zp);
    KC_LAUNCHED();
    return KC_OK;
}

/* QAdd (rt_qadd) and QMul (rt_qmul) of equal shapes; mul != 0 picks QMul (mb unused). */
__global__ void kc_qbinary_kernel(int64_t count, const uint8_t *__restrict__ a, int32_t a_zp,
                                  int32_t ma, const uint8_t *__restrict__ b, int32_t b_zp,
                                  int32_t mb, int shift, int32_t y_zp, int mul,
                                  uint8_t *__restrict__ y) {
    kc_pdl_sync();
    KC_FOR(i, count) {
        int64_t da = (int32_t)a[i] - a_zp, db = (int32_t)b[i] - b_zp;
        int64_t t = mul ? da * db * ma : da * ma + db * mb;
        int64_t v = kc_qround_shift(t, shift) + y_zp;
        y[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
}

static inline int kc_qbinary(cudaStream_t s, int64_t count, const uint8_t *a, int32_t a_zp,
                             int32_t ma, const uint8_t *b, int32_t b_zp, int32_t mb, int shift,
                             int32_t y_zp, int mul, uint8_t *y) {
    if (count <= 0) return KC_OK;
    kc_qlaunch(kc_qbinary_kernel, dim3(kc_grid(count)), dim3(KC_THREADS), 0, s, count, a, a_zp, ma,
               b, b_zp, mb, shift, y_zp, mul, y);
    KC_LAUNCHED();
    return KC_OK;
}

/* y = table[x] (rt_qlut) */
__global__ void kc_qlut_kernel(int64_t count, const uint8_t *__restrict__ x,
                               const uint8_t *__restrict__ table, uint8_t *__restrict__ y) {
    kc_pdl_sync();
    __shared__ uint8_t t[256];
    for (int j = threadIdx.x; j < 256; j += blockDim.x) t[j] = table[j];
    __syncthreads();
    KC_FOR(i, count) y[i] = t[x[i]];
}

static inline int kc_qlut(cudaStream_t s, int64_t count, const uint8_t *x, const uint8_t *table,
                          uint8_t *y) {
    if (count <= 0) return KC_OK;
    kc_qlaunch(kc_qlut_kernel, dim3(kc_grid(count)), dim3(KC_THREADS), 0, s, count, x, table, y);
    KC_LAUNCHED();
    return KC_OK;
}

/* QuantizeLinear float32 (or float16 bits) -> uint8, one scale and zero point (rt_quantize:
 * the quotient in double, rounded half to even, plus the zero point, saturated). */
static __device__ __forceinline__ double kc_qload(const float *x, int64_t i) { return (double)x[i]; }
static __device__ __forceinline__ double kc_qload(const uint16_t *x, int64_t i) {
    return (double)__half2float(__ushort_as_half(x[i]));
}
template <typename T>
__global__ void kc_quantize_u8_kernel(int64_t count, const T *__restrict__ x,
                                      const float *__restrict__ scale,
                                      const uint8_t *__restrict__ zp, uint8_t *__restrict__ y) {
    kc_pdl_sync();
    double s = (double)scale[0], z = zp ? (double)zp[0] : 0.0;
    KC_FOR(i, count) {
        double v = rint(kc_qload(x, i) / s) + z;
        v = v < 0.0 ? 0.0 : v > 255.0 ? 255.0 : v;
        y[i] = (uint8_t)(int64_t)v;
    }
}

/* DequantizeLinear uint8 -> float32, one scale and zero point (rt_dequantize: the
 * difference times the scale in float32). */
__global__ void kc_dequantize_u8_kernel(int64_t count, const uint8_t *__restrict__ x,
                                        const float *__restrict__ scale,
                                        const uint8_t *__restrict__ zp, float *__restrict__ y) {
    kc_pdl_sync();
    float s = scale[0];
    int32_t z = zp ? (int32_t)zp[0] : 0;
    KC_FOR(i, count) y[i] = __fmul_rn((float)((int32_t)x[i] - z), s);
}

template <typename T>
static inline int kc_quantize_u8(cudaStream_t s, int64_t count, const T *x, const float *scale,
                                 const uint8_t *zp, uint8_t *y) {
    if (count <= 0) return KC_OK;
    kc_qlaunch(kc_quantize_u8_kernel<T>, dim3(kc_grid(count)), dim3(KC_THREADS), 0, s, count, x,
               scale, zp, y);
    KC_LAUNCHED();
    return KC_OK;
}

static inline int kc_dequantize_u8(cudaStream_t s, int64_t count, const uint8_t *x,
                                   const float *scale, const uint8_t *zp, float *y) {
    if (count <= 0) return KC_OK;
    kc_qlaunch(kc_dequantize_u8_kernel, dim3(kc_grid(count)), dim3(KC_THREADS), 0, s, count, x,
               scale, zp, y);
    KC_LAUNCHED();
    return KC_OK;
}

#endif
