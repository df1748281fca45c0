/* rt_qgemm.h: the int8 GEMM microkernel under every int8 convolution and matrix product
 * (rt_qconv.h): uint8 activations x int8 weights -> int32 sums, then the fused
 * requantization epilogue (bias, residual, clamp activation) down to uint8.
 *
 * Packed weights (made once at compile time by backend/qplan.c; the bundle never repacks):
 * the reduction index k of output channel n runs over (tap, channel) with the channels of
 * a tap padded to C4 = ceil(C/4) blocks of 4. Per group g and panel p of RT_QGEMM_NR = 16
 * output channels (n0 = p*16), block kb (0 <= kb < K4 = taps*C4) is 64 bytes:
 *     wp[((g*NP + p)*K4 + kb)*64 + j*4 + t] = w[n0 + j][kb*4 + t]   (0 past M or C)
 * so one 64-byte load is 16 columns x 4 reduction values: one zmm for AVX-512 VNNI's
 * vpdpbusd (16 int32 lanes, each the dot product of 4 u8 x 4 s8), four 16-byte vectors for
 * NEON's sdot, two halves for AVX2. After the panels, int32 colsum[G*NP*16] = sum_k w[n][k],
 * the correction NEON's signed dot product needs (it reads a - 128). The fp32 GEMM of the
 * CPU path can take the same idea: panels of NR columns, the reduction blocked by the
 * vector instruction's depth, prepacked at compile time.
 *
 * Activations arrive as a table of row pointers per tap (indirect convolution: no im2col
 * buffer; a padded tap points at a row of zero points), each row C4*4 bytes readable.
 *
 * Paths, chosen by the compiler's macros when the bundle is built (never at run time):
 * AVX-512 VNNI (vpdpbusd zmm), AVX-VNNI (vpdpbusd ymm), AVX2 (bytes widened to int16 and
 * vpmaddwd: vpmaddubsw would saturate 255*127*2 at int16 and break bit-identity), AArch64
 * NEON dot product (sdot with the 128*colsum correction), SSE2 (x86-64's baseline, what a
 * plain -O2 build gets: AVX2's method at 128 bits), portable C. All compute the
 * exact int32 sums, so the outputs are bit-identical across paths.
 * Tile: RT_QGEMM_MR = 8 rows x 32 columns: 16 zmm accumulators, 2 weight loads and 8
 * broadcasts per 4 reduction steps (Zen 4: one zmm vpdpbusd a cycle, 64 MACs).
 * Floor: a convolution of P pixels, M channels, K reduction needs P*M*K MACs (P*M*K/64
 * vpdpbusd) and reads the weights P/8 times from cache. C99. */
#ifndef KILN_RT_QGEMM_H
#define KILN_RT_QGEMM_H

#include "rt_common.h"

#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && !defined(RT_QGEMM_PORTABLE)
#define RT_QGEMM_ISA "avx512vnni"
#define RT_QGEMM_AVX512 1
#include <immintrin.h>
#elif defined(__AVXVNNI__) && !defined(RT_QGEMM_PORTABLE)
#define RT_QGEMM_ISA "avxvnni"
#define RT_QGEMM_AVXVNNI 1
#include <immintrin.h>
#elif defined(__AVX2__) && !defined(RT_QGEMM_PORTABLE)
#define RT_QGEMM_ISA "avx2"
#define RT_QGEMM_AVX2 1
#include <immintrin.h>
#elif defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD) && !defined(RT_QGEMM_PORTABLE)
#define RT_QGEMM_ISA "neon-sdot"
#define RT_QGEMM_NEON 1
#include <arm_neon.h>
#elif defined(__SSE2__) && !defined(RT_QGEMM_PORTABLE)
#define RT_QGEMM_ISA "sse2"
#define RT_QGEMM_SSE2 1
#include <emmintrin.h>
#else
#define RT_QGEMM_ISA "portable"
#endif
/* The x86 paths with 256-bit integer vectors share AVX2's requantization and depthwise
 * kernel (rt_qconv.h); only the GEMM tile differs. */
#if defined(RT_QGEMM_AVX512) || defined(RT_QGEMM_AVXVNNI) || defined(RT_QGEMM_AVX2)
#define RT_QGEMM_YMM 1
#endif

#define RT_QGEMM_MR 8  /* rows (output pixels) per tile */
#define RT_QGEMM_NR 16 /* output channels per panel: one zmm of int32 */
#define RT_QGEMM_NT 32 /* columns per tile: two panels */
#define RT_QGEMM_KB 64 /* bytes of one packed block: NR columns x 4 */
#define RT_QGEMM_AVX2_KC 256 /* blocks of the reduction widened at a time (AVX2: 16 KB) */
#define RT_QGEMM_BAND 16 /* row tiles of a 1x1 layer with a short reduction that share the
                          * requantization terms of a panel pair (AVX-512: rt_qgemm_vnni_band) */

/* The requantization of one node, per output channel n (arrays of M):
 *   t = acc * mult[n] + (r - r_zp) * rmult[n]    (int64; the residual term only with r)
 *   y = clamp(y_zp + floor((t + 2^(shift[n]-1)) / 2^shift[n]), lo, hi)
 * acc already holds bias[n] (zero-point corrections folded in at compile time). */
typedef struct RtQRequant {
    const int32_t *bias;  /* (M) */
    const int32_t *mult;  /* (M), below 2^31 */
    const int32_t *rmult; /* (M) or NULL: no residual */
    const uint8_t *shift; /* (M), 1..62 */
    int32_t y_zp, r_zp, lo, hi;
} RtQRequant;

RT_API int32_t rt_qload4(const uint8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* floor(t / 2^s + 1/2) for 1 <= s <= 62, without shifting a negative number */
RT_API int64_t rt_qround_shift(int64_t t, int s) {
    int64_t u = t + ((int64_t)1 << (s - 1));
    return u >= 0 ? u >> s : -((-u - 1) >> s) - 1;
}

RT_API uint8_t rt_qrequant1(int32_t acc, int32_t mult, int32_t rmult, int r, int shift,
                            const RtQRequant *q) {
    int64_t t = (int64_t)acc * mult + (int64_t)r * rmult;
    int64_t v = rt_qround_shift(t, shift) + q->y_zp;
    v = v > q->lo ? v : q->lo; /* min(max(v, lo), hi): Clip's order, as the SIMD paths */
    return (uint8_t)(v < q->hi ? v : q->hi);
}

#if defined(RT_QGEMM_YMM)
/* The requantization of 8 channels with AVX2: per-channel terms loaded once (rt_qrq_prep)
 * and applied to as many rows as share them (rt_qrq8). int64 products of the even and odd
 * lanes (vpmuldq), the rounding term, an arithmetic shift by lane made from the logical one
 * ((u ^ s) >> n ^ s with s the sign: floor, as rt_qround_shift), the zero point and clamp
 * in int64, then the bytes. */
typedef struct RtQRqV {
    __m256i m, mo, she, sho, rnde, rndo, rm, rmo, rzp, yzp, lo, hi;
    __m256i s32, yzp32, lo32, hi32; /* shifts - 32 by lane; the rest as int32 */
    __m256i k32;                    /* 2^(s-33) + y_zp 2^(s-32) by lane (fold) */
    int hi_word;                    /* every shift >= 32: the high words suffice */
    int fold;                       /* every shift in 33..53, y_zp in 0..255: all in int32 */
} RtQRqV;

RT_API void rt_qrq_prep(RtQRqV *k, const RtQRequant *q, int64_t n0, int res) {
    const __m256i one = _mm256_set1_epi64x(1);
    __m256i sh = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(q->shift + n0)));
    k->m = _mm256_loadu_si256((const __m256i *)(const void *)(q->mult + n0));
    k->mo = _mm256_srli_epi64(k->m, 32);
    k->she = _mm256_and_si256(sh, _mm256_set1_epi64x(0xFF));
    k->sho = _mm256_srli_epi64(sh, 32);
    k->rnde = _mm256_sllv_epi64(one, _mm256_sub_epi64(k->she, one));
    k->rndo = _mm256_sllv_epi64(one, _mm256_sub_epi64(k->sho, one));
    k->rm = res ? _mm256_loadu_si256((const __m256i *)(const void *)(q->rmult + n0)) : _mm256_setzero_si256();
    k->rmo = _mm256_srli_epi64(k->rm, 32);
    k->rzp = _mm256_set1_epi32(q->r_zp);
    k->yzp = _mm256_set1_epi64x(q->y_zp);
    k->lo = _mm256_set1_epi64x(q->lo);
    k->hi = _mm256_set1_epi64x(q->hi);
    k->s32 = _mm256_sub_epi32(sh, _mm256_set1_epi32(32));
    k->hi_word = _mm256_movemask_epi8(_mm256_cmpgt_epi32(_mm256_set1_epi32(32), sh)) == 0;
    k->yzp32 = _mm256_set1_epi32(q->y_zp);
    k->lo32 = _mm256_set1_epi32(q->lo);
    k->hi32 = _mm256_set1_epi32(q->hi);
    /* With 33 <= s: floor((t + 2^(s-1)) / 2^32) = floor(t / 2^32) + 2^(s-33) exactly (the
     * rounding term is a multiple of 2^32), and y_zp 2^(s-32) joins it under the shift:
     * y = floor((hi(t) + 2^(s-33) + y_zp 2^(s-32)) / 2^(s-32)), the same value. hi(t) = floor(t /
     * 2^32) of |t| < 2^62 + 2^39 (|acc| < 2^31, mult < 2^31, the residual term 255 * rmult)
     * is below 2^30 + 2^7, the constant below 2^(s-24) <= 2^29 for s <= 53: no int32 overflow. */
    k->fold = _mm256_movemask_epi8(_mm256_or_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(33), sh),
                                                   _mm256_cmpgt_epi32(sh, _mm256_set1_epi32(53)))) == 0 &&
              q->y_zp >= 0 && q->y_zp <= 255;
    k->k32 = _mm256_setzero_si256();
    if (k->fold)
        k->k32 = _mm256_add_epi32(_mm256_sllv_epi32(_mm256_set1_epi32(1), _mm256_sub_epi32(sh, _mm256_set1_epi32(33))),
                                  _mm256_sllv_epi32(k->yzp32, k->s32));
}

/* y[0..8) from the sums a (and residual r[0..8) or NULL); inlined always (a call per 8
 * outputs costs more than its work; GCC stops inlining it by itself at this size) */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
RT_API void rt_qrq8v(const RtQRqV *k, __m256i a, const uint8_t *r, uint8_t *y) {
    const __m256i zero = _mm256_setzero_si256();
    const __m256i pick = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                          0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    __m256i pe = _mm256_mul_epi32(a, k->m);
    __m256i po = _mm256_mul_epi32(_mm256_srli_epi64(a, 32), k->mo);
    __m256i se, so, v;
    __m128i out;
    if (r) {
        __m256i rv = _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)r)), k->rzp);
        pe = _mm256_add_epi64(pe, _mm256_mul_epi32(rv, k->rm));
        po = _mm256_add_epi64(po, _mm256_mul_epi32(_mm256_srli_epi64(rv, 32), k->rmo));
    }
    if (k->fold) { /* the high words, the rounding and zero point as one int32 term (rt_qrq_prep) */
        v = _mm256_blend_epi32(_mm256_srli_epi64(pe, 32), po, 0xAA);
        v = _mm256_srav_epi32(_mm256_add_epi32(v, k->k32), k->s32);
        v = _mm256_min_epi32(_mm256_max_epi32(v, k->lo32), k->hi32);
        v = _mm256_shuffle_epi8(v, pick);
        out = _mm_unpacklo_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        _mm_storel_epi64((__m128i *)(void *)y, out);
        return;
    }
    pe = _mm256_add_epi64(pe, k->rnde);
    po = _mm256_add_epi64(po, k->rndo);
    if (k->hi_word) {
        /* floor(u / 2^s) = floor(floor(u / 2^32) / 2^(s-32)): the high words of the int64
         * sums (|u| < 2^63, so they fit), then vpsravd; the rest in int32 lanes */
        v = _mm256_blend_epi32(_mm256_srli_epi64(pe, 32), po, 0xAA);
        v = _mm256_add_epi32(_mm256_srav_epi32(v, k->s32), k->yzp32);
        v = _mm256_min_epi32(_mm256_max_epi32(v, k->lo32), k->hi32);
        v = _mm256_shuffle_epi8(v, pick);
        out = _mm_unpacklo_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        _mm_storel_epi64((__m128i *)(void *)y, out);
        return;
    }
    se = _mm256_cmpgt_epi64(zero, pe);
    so = _mm256_cmpgt_epi64(zero, po);
    pe = _mm256_add_epi64(_mm256_xor_si256(_mm256_srlv_epi64(_mm256_xor_si256(pe, se), k->she), se), k->yzp);
    po = _mm256_add_epi64(_mm256_xor_si256(_mm256_srlv_epi64(_mm256_xor_si256(po, so), k->sho), so), k->yzp);
    pe = _mm256_blendv_epi8(pe, k->lo, _mm256_cmpgt_epi64(k->lo, pe));
    po = _mm256_blendv_epi8(po, k->lo, _mm256_cmpgt_epi64(k->lo, po));
    pe = _mm256_blendv_epi8(pe, k->hi, _mm256_cmpgt_epi64(pe, k->hi));
    po = _mm256_blendv_epi8(po, k->hi, _mm256_cmpgt_epi64(po, k->hi));
    /* bytes: lane 2i at 8i, lane 2i+1 at 8i+4 of each half */
    v = _mm256_shuffle_epi8(_mm256_or_si256(pe, _mm256_slli_epi64(po, 32)), pick);
    out = _mm_unpacklo_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64((__m128i *)(void *)y, out);
}

RT_API void rt_qrq8(const RtQRqV *k, const int32_t *acc, const uint8_t *r, uint8_t *y) {
    rt_qrq8v(k, _mm256_loadu_si256((const __m256i *)(const void *)acc), r, y);
}
#endif

/* y[j] = requant(acc[j]) for channels n0 .. n0+n (residual row r or NULL). */
RT_API void rt_qrequant_row(const int32_t *acc, int64_t n0, int64_t n, const RtQRequant *q,
                            const uint8_t *r, uint8_t *y) {
    int64_t j = 0;
#if defined(RT_QGEMM_AVX512)
    for (; j + 16 <= n; j += 16) {
        __m512i a = _mm512_loadu_si512((const void *)(acc + j));
        __m512i m = _mm512_loadu_si512((const void *)(q->mult + n0 + j));
        __m512i sh = _mm512_cvtepu8_epi64(_mm_loadl_epi64((const __m128i *)(const void *)(q->shift + n0 + j)));
        __m512i sh2 = _mm512_cvtepu8_epi64(_mm_loadl_epi64((const __m128i *)(const void *)(q->shift + n0 + j + 8)));
        /* even lanes and odd lanes as int64 products */
        __m512i pe = _mm512_mul_epi32(a, m);
        __m512i po = _mm512_mul_epi32(_mm512_srli_epi64(a, 32), _mm512_srli_epi64(m, 32));
        __m512i lo64, hi64, one = _mm512_set1_epi64(1);
        __m512i she, sho;
        if (r) {
            __m512i rv = _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(r + j))),
                                          _mm512_set1_epi32(q->r_zp));
            __m512i rm = _mm512_loadu_si512((const void *)(q->rmult + n0 + j));
            pe = _mm512_add_epi64(pe, _mm512_mul_epi32(rv, rm));
            po = _mm512_add_epi64(po, _mm512_mul_epi32(_mm512_srli_epi64(rv, 32),
                                                       _mm512_srli_epi64(rm, 32)));
        }
        /* shifts of lanes 0,2,4.. and 1,3,5..: sh holds lanes 0..7, sh2 lanes 8..15 */
        she = _mm512_permutex2var_epi64(sh, _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0), sh2);
        sho = _mm512_permutex2var_epi64(sh, _mm512_set_epi64(15, 13, 11, 9, 7, 5, 3, 1), sh2);
        pe = _mm512_add_epi64(pe, _mm512_sllv_epi64(one, _mm512_sub_epi64(she, one)));
        po = _mm512_add_epi64(po, _mm512_sllv_epi64(one, _mm512_sub_epi64(sho, one)));
        lo64 = _mm512_srav_epi64(pe, she); /* arithmetic: floor, as rt_qround_shift */
        hi64 = _mm512_srav_epi64(po, sho);
        {
            /* saturate to int32 range before packing (values beyond clamp anyway) */
            __m512i big = _mm512_set1_epi64(1 << 20), small = _mm512_set1_epi64(-(1 << 20));
            __m512i v, out;
            lo64 = _mm512_min_epi64(_mm512_max_epi64(lo64, small), big);
            hi64 = _mm512_min_epi64(_mm512_max_epi64(hi64, small), big);
            v = _mm512_or_si512(_mm512_and_si512(lo64, _mm512_set1_epi64(0xFFFFFFFF)),
                                _mm512_slli_epi64(hi64, 32)); /* even | odd << 32 */
            v = _mm512_add_epi32(v, _mm512_set1_epi32(q->y_zp));
            v = _mm512_max_epi32(v, _mm512_set1_epi32(q->lo));
            v = _mm512_min_epi32(v, _mm512_set1_epi32(q->hi));
            out = v;
            _mm_storeu_si128((__m128i *)(void *)(y + j), _mm512_cvtepi32_epi8(out));
        }
    }
#endif
#if defined(RT_QGEMM_YMM)
    for (; j + 8 <= n; j += 8) {
        RtQRqV k;
        rt_qrq_prep(&k, q, n0 + j, r != NULL);
        rt_qrq8(&k, acc + j, r ? r + j : NULL, y + j);
    }
#endif
    for (; j < n; j++)
        y[j] = rt_qrequant1(acc[j], q->mult[n0 + j], r ? q->rmult[n0 + j] : 0,
                            r ? (int)r[j] - q->r_zp : 0, q->shift[n0 + j], q);
}

/* The rows i < mr of a tile (acc rows RT_QGEMM_NT apart, y and r rows ystride apart):
 * rt_qrequant_row on each, the per-channel terms shared by the rows on AVX2. */
RT_API void rt_qrequant_tile(const int32_t *acc, int mr, int64_t n0, int64_t n, const RtQRequant *q,
                             const uint8_t *r, uint8_t *y, int64_t ystride) {
    int64_t j = 0;
    int i;
#if defined(RT_QGEMM_YMM)
    for (; j + 8 <= n; j += 8) {
        RtQRqV k;
        rt_qrq_prep(&k, q, n0 + j, r != NULL);
        for (i = 0; i < mr; i++)
            rt_qrq8(&k, acc + i * RT_QGEMM_NT + j, r ? r + i * ystride + j : NULL, y + i * ystride + j);
    }
#endif
    if (j < n)
        for (i = 0; i < mr; i++)
            rt_qrequant_row(acc + i * RT_QGEMM_NT + j, n0 + j, n - j, q, r ? r + i * ystride + j : NULL,
                            y + i * ystride + j);
}

#if defined(RT_QGEMM_AVX2)
/* The AVX2 tile's rows i < mr, blocks k0 .. k0+kn of the reduction (taps of c4 blocks, a[t*MR
 * + i] the row of tap t), widened to int16 into xb[i] (4 values = 8 bytes a block, so one
 * vpbroadcastq feeds a block); rows past mr are zeros (their sums are dropped). Rows that
 * follow each other in memory, as the taps along x of a stride-1 convolution or the copied
 * rows of an RGB input do, widen as one run. */
RT_API void rt_qgemm_avx2_widen(int mr, int64_t c4, const uint8_t *const *a, int64_t k0, int64_t kn,
                                uint64_t (*xb)[RT_QGEMM_AVX2_KC]) {
    int i;
    for (i = 0; i < RT_QGEMM_MR; i++) {
        uint64_t *dst = xb[i];
        int64_t kg = k0;
        if (i >= mr) {
            memset(dst, 0, (size_t)kn * 8);
            continue;
        }
        while (kg < k0 + kn) { /* runs of blocks contiguous in memory */
            int64_t t = kg / c4, kl = kg - t * c4, run = c4 - kl, j = 0;
            const uint8_t *src = a[t * RT_QGEMM_MR + i] + kl * 4;
            for (; kg + run < k0 + kn && a[(t + 1) * RT_QGEMM_MR + i] == src + run * 4; t++)
                run += c4;
            if (run > k0 + kn - kg) run = k0 + kn - kg;
            for (; j + 4 <= run; j += 4)
                _mm256_storeu_si256((__m256i *)(void *)(dst + j),
                                    _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(src + j * 4))));
            for (; j < run; j++)
                _mm_storel_epi64((__m128i *)(void *)(dst + j),
                                 _mm_cvtepu8_epi16(_mm_cvtsi32_si128(rt_qload4(src + j * 4))));
            dst += run;
            kg += run;
        }
    }
}

/* One pass of the AVX2 tile: 8 widened rows x 4 columns (16 bytes of each block at w, blocks
 * RT_QGEMM_KB apart) over kn blocks, exact int32 sums with vpmaddwd (16 int16 MACs;
 * vpmaddubsw would saturate). 8 accumulators whose int32 lanes hold the (k 0-1, k 2-3)
 * halves of each column's sum; per block 1 weight widening, 8 broadcast loads, 8 vpmaddwd,
 * 8 vpaddd for 128 MACs. h[k] = row 2k's 4 column sums (low half), row 2k+1's (high). */
RT_API void rt_qgemm_avx2_pass(int64_t kn, uint64_t (*xb)[RT_QGEMM_AVX2_KC], const int8_t *w,
                               __m256i *h) {
    __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0, c4v = c0, c5 = c0, c6 = c0, c7 = c0;
    int64_t kb;
    for (kb = 0; kb < kn; kb++, w += RT_QGEMM_KB) {
        __m256i b = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)w));
#if defined(__GNUC__)
        /* GCC hoists the 8 broadcasts ahead of the products and spills an
         * accumulator; spelled out, the loop keeps all in registers (the two temporaries
         * as outputs, not fixed clobbered registers, which made GCC copy accumulators in
         * and out of them each block once the pass was inlined twice) */
        __m256i t0, t1;
        __asm__("vpbroadcastq %[x0], %[t0]\n\tvpmaddwd %[b], %[t0], %[t0]\n\tvpaddd %[t0], %[c0], %[c0]\n\t"
                "vpbroadcastq %[x1], %[t1]\n\tvpmaddwd %[b], %[t1], %[t1]\n\tvpaddd %[t1], %[c1], %[c1]\n\t"
                "vpbroadcastq %[x2], %[t0]\n\tvpmaddwd %[b], %[t0], %[t0]\n\tvpaddd %[t0], %[c2], %[c2]\n\t"
                "vpbroadcastq %[x3], %[t1]\n\tvpmaddwd %[b], %[t1], %[t1]\n\tvpaddd %[t1], %[c3], %[c3]\n\t"
                "vpbroadcastq %[x4], %[t0]\n\tvpmaddwd %[b], %[t0], %[t0]\n\tvpaddd %[t0], %[c4], %[c4]\n\t"
                "vpbroadcastq %[x5], %[t1]\n\tvpmaddwd %[b], %[t1], %[t1]\n\tvpaddd %[t1], %[c5], %[c5]\n\t"
                "vpbroadcastq %[x6], %[t0]\n\tvpmaddwd %[b], %[t0], %[t0]\n\tvpaddd %[t0], %[c6], %[c6]\n\t"
                "vpbroadcastq %[x7], %[t1]\n\tvpmaddwd %[b], %[t1], %[t1]\n\tvpaddd %[t1], %[c7], %[c7]"
                : [t0] "=&x"(t0), [t1] "=&x"(t1), [c0] "+x"(c0), [c1] "+x"(c1), [c2] "+x"(c2),
                  [c3] "+x"(c3), [c4] "+x"(c4v), [c5] "+x"(c5), [c6] "+x"(c6), [c7] "+x"(c7)
                : [b] "x"(b), [x0] "m"(xb[0][kb]), [x1] "m"(xb[1][kb]), [x2] "m"(xb[2][kb]),
                  [x3] "m"(xb[3][kb]), [x4] "m"(xb[4][kb]), [x5] "m"(xb[5][kb]),
                  [x6] "m"(xb[6][kb]), [x7] "m"(xb[7][kb]));
#else
#define RT_QGEMM_AVX2_ROW(ci, r) \
    ci = _mm256_add_epi32(ci, _mm256_madd_epi16(_mm256_set1_epi64x((long long)xb[r][kb]), b))
        RT_QGEMM_AVX2_ROW(c0, 0);
        RT_QGEMM_AVX2_ROW(c1, 1);
        RT_QGEMM_AVX2_ROW(c2, 2);
        RT_QGEMM_AVX2_ROW(c3, 3);
        RT_QGEMM_AVX2_ROW(c4v, 4);
        RT_QGEMM_AVX2_ROW(c5, 5);
        RT_QGEMM_AVX2_ROW(c6, 6);
        RT_QGEMM_AVX2_ROW(c7, 7);
#undef RT_QGEMM_AVX2_ROW
#endif
    }
    /* hadd of rows (2i, 2i+1): [r0 c01, r1 c01 | r0 c23, r1 c23] -> rows apart */
    h[0] = _mm256_permute4x64_epi64(_mm256_hadd_epi32(c0, c1), 0xD8);
    h[1] = _mm256_permute4x64_epi64(_mm256_hadd_epi32(c2, c3), 0xD8);
    h[2] = _mm256_permute4x64_epi64(_mm256_hadd_epi32(c4v, c5), 0xD8);
    h[3] = _mm256_permute4x64_epi64(_mm256_hadd_epi32(c6, c7), 0xD8);
}
#endif

/* acc[i*32 + j] += sum_k a_i[k] * w[n0+j][k] for i < mr, j < 16*nv: taps of c4 blocks each,
 * a[t*RT_QGEMM_MR + i] the row of tap t, pw the first panel, the second pstride bytes on.
 * acc rows are RT_QGEMM_NT wide. */
RT_API void rt_qgemm_tile(int mr, int nv, int64_t taps, int64_t c4, const uint8_t *const *a,
                          const int8_t *pw, int64_t pstride, int32_t *acc) {
#if defined(RT_QGEMM_AVX512)
    __m512i c[RT_QGEMM_MR][2];
    int i, v;
    int64_t t, kb;
    const int8_t *w0 = pw, *w1 = pw + pstride;
    for (i = 0; i < RT_QGEMM_MR; i++) c[i][0] = c[i][1] = _mm512_setzero_si512();
    if (mr == RT_QGEMM_MR && nv == 2) {
        for (t = 0; t < taps; t++) {
            const uint8_t *const *at = a + t * RT_QGEMM_MR;
            for (kb = 0; kb < c4; kb++, w0 += RT_QGEMM_KB, w1 += RT_QGEMM_KB) {
                __m512i b0 = _mm512_loadu_si512((const void *)w0);
                __m512i b1 = _mm512_loadu_si512((const void *)w1);
                for (i = 0; i < RT_QGEMM_MR; i++) {
                    __m512i x = _mm512_set1_epi32(rt_qload4(at[i] + kb * 4));
                    c[i][0] = _mm512_dpbusd_epi32(c[i][0], x, b0);
                    c[i][1] = _mm512_dpbusd_epi32(c[i][1], x, b1);
                }
            }
        }
    } else {
        for (t = 0; t < taps; t++) {
            const uint8_t *const *at = a + t * RT_QGEMM_MR;
            for (kb = 0; kb < c4; kb++, w0 += RT_QGEMM_KB, w1 += RT_QGEMM_KB) {
                __m512i b0 = _mm512_loadu_si512((const void *)w0);
                __m512i b1 = nv == 2 ? _mm512_loadu_si512((const void *)w1) : b0;
                for (i = 0; i < mr; i++) {
                    __m512i x = _mm512_set1_epi32(rt_qload4(at[i] + kb * 4));
                    c[i][0] = _mm512_dpbusd_epi32(c[i][0], x, b0);
                    c[i][1] = _mm512_dpbusd_epi32(c[i][1], x, b1);
                }
            }
        }
    }
    for (i = 0; i < mr; i++)
        for (v = 0; v < nv; v++) {
            int32_t *o = acc + i * RT_QGEMM_NT + v * RT_QGEMM_NR;
            _mm512_storeu_si512((void *)o, _mm512_add_epi32(_mm512_loadu_si512((const void *)o), c[i][v]));
        }
#elif defined(RT_QGEMM_AVXVNNI)
    /* ymm: each 64-byte block is two 8-column halves */
    __m256i c[RT_QGEMM_MR][4];
    int i, v;
    int64_t t, kb;
    for (i = 0; i < RT_QGEMM_MR; i++) c[i][0] = c[i][1] = c[i][2] = c[i][3] = _mm256_setzero_si256();
    for (v = 0; v < nv; v++) {
        const int8_t *w = pw + v * pstride;
        for (t = 0; t < taps; t++) {
            const uint8_t *const *at = a + t * RT_QGEMM_MR;
            for (kb = 0; kb < c4; kb++, w += RT_QGEMM_KB) {
                __m256i b0 = _mm256_loadu_si256((const __m256i *)(const void *)w);
                __m256i b1 = _mm256_loadu_si256((const __m256i *)(const void *)(w + 32));
                for (i = 0; i < mr; i++) {
                    __m256i x = _mm256_set1_epi32(rt_qload4(at[i] + kb * 4));
                    c[i][2 * v] = _mm256_dpbusd_avx_epi32(c[i][2 * v], x, b0);
                    c[i][2 * v + 1] = _mm256_dpbusd_avx_epi32(c[i][2 * v + 1], x, b1);
                }
            }
        }
    }
    for (i = 0; i < mr; i++)
        for (v = 0; v < 2 * nv; v++) {
            int32_t *o = acc + i * RT_QGEMM_NT + v * 8;
            _mm256_storeu_si256((__m256i *)(void *)o, _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(const void *)o), c[i][v]));
        }
#elif defined(RT_QGEMM_AVX2)
    /* Exact sums with vpmaddwd (rt_qgemm_avx2_pass), the rows widened once per chunk of
     * RT_QGEMM_AVX2_KC blocks; each pass's sums are added into the accumulator rows. */
    uint64_t xb[RT_QGEMM_MR][RT_QGEMM_AVX2_KC];
    int64_t k4 = taps * c4, k0;
    int i, v, q;
    for (k0 = 0; k0 < k4; k0 += RT_QGEMM_AVX2_KC) {
        int64_t kn = k4 - k0 < RT_QGEMM_AVX2_KC ? k4 - k0 : RT_QGEMM_AVX2_KC;
        rt_qgemm_avx2_widen(mr, c4, a, k0, kn, xb);
        for (v = 0; v < nv; v++)
            for (q = 0; q < 4; q++) {
                __m256i h[4];
                rt_qgemm_avx2_pass(kn, xb, pw + v * pstride + k0 * RT_QGEMM_KB + 16 * q, h);
                for (i = 0; i < mr; i++) {
                    int32_t *o = acc + i * RT_QGEMM_NT + v * RT_QGEMM_NR + q * 4;
                    __m128i s = i & 1 ? _mm256_extracti128_si256(h[i >> 1], 1) : _mm256_castsi256_si128(h[i >> 1]);
                    _mm_storeu_si128((__m128i *)(void *)o, _mm_add_epi32(_mm_loadu_si128((const __m128i *)(const void *)o), s));
                }
            }
    }
#elif defined(RT_QGEMM_SSE2)
    /* x86-64's baseline (a plain -O2 build): as AVX2, 128 bits wide. 16 bytes of a block
     * (4 columns x 4 k) widen to two vectors of 8 int16 (columns 0-1, 2-3); pmaddwd against
     * the row's 4 values twice gives, per column, the k 0-1 and 2-3 partial sums. One row
     * and 4 columns at a time keep the accumulators in 2 registers. */
    int i, v, q;
    int64_t t, kb;
    const __m128i zero = _mm_setzero_si128();
    for (v = 0; v < nv; v++)
        for (q = 0; q < 4; q++)
            for (i = 0; i < mr; i++) {
                __m128i c0 = zero, c1 = zero;
                const int8_t *w = pw + v * pstride + 16 * q;
                int32_t part[8], *o = acc + i * RT_QGEMM_NT + v * RT_QGEMM_NR + q * 4;
                for (t = 0; t < taps; t++) {
                    const uint8_t *row = a[t * RT_QGEMM_MR + i];
                    for (kb = 0; kb < c4; kb++, w += RT_QGEMM_KB) {
                        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)w);
                        __m128i lo = _mm_srai_epi16(_mm_unpacklo_epi8(b, b), 8);
                        __m128i hi = _mm_srai_epi16(_mm_unpackhi_epi8(b, b), 8);
                        __m128i x = _mm_unpacklo_epi8(_mm_set1_epi32(rt_qload4(row + kb * 4)), zero);
                        c0 = _mm_add_epi32(c0, _mm_madd_epi16(x, lo));
                        c1 = _mm_add_epi32(c1, _mm_madd_epi16(x, hi));
                    }
                }
                _mm_storeu_si128((__m128i *)(void *)part, c0);
                _mm_storeu_si128((__m128i *)(void *)(part + 4), c1);
                o[0] += part[0] + part[1];
                o[1] += part[2] + part[3];
                o[2] += part[4] + part[5];
                o[3] += part[6] + part[7];
            }
#elif defined(RT_QGEMM_NEON)
    /* sdot is signed x signed: the rows are read as a - 128 (xor 0x80); the caller adds
     * 128 * colsum (rt_qgemm_colsum_fix). */
    int32x4_t c[RT_QGEMM_MR][4];
    int i, v, q;
    int64_t t, kb;
    for (v = 0; v < nv; v++) {
        const int8_t *w = pw + v * pstride;
        for (i = 0; i < RT_QGEMM_MR; i++) c[i][0] = c[i][1] = c[i][2] = c[i][3] = vdupq_n_s32(0);
        for (t = 0; t < taps; t++) {
            const uint8_t *const *at = a + t * RT_QGEMM_MR;
            for (kb = 0; kb < c4; kb++, w += RT_QGEMM_KB) {
                int8x16_t b0 = vld1q_s8(w), b1 = vld1q_s8(w + 16), b2 = vld1q_s8(w + 32),
                          b3 = vld1q_s8(w + 48);
                for (i = 0; i < mr; i++) {
                    int8x16_t x = vreinterpretq_s8_s32(
                        vdupq_n_s32(rt_qload4(at[i] + kb * 4) ^ (int32_t)0x80808080u));
                    c[i][0] = vdotq_s32(c[i][0], b0, x);
                    c[i][1] = vdotq_s32(c[i][1], b1, x);
                    c[i][2] = vdotq_s32(c[i][2], b2, x);
                    c[i][3] = vdotq_s32(c[i][3], b3, x);
                }
            }
        }
        for (i = 0; i < mr; i++)
            for (q = 0; q < 4; q++) {
                int32_t *o = acc + i * RT_QGEMM_NT + v * RT_QGEMM_NR + q * 4;
                vst1q_s32(o, vaddq_s32(vld1q_s32(o), c[i][q]));
            }
    }
#else
    int i, v, j, tt;
    int64_t t, kb;
    for (v = 0; v < nv; v++) {
        const int8_t *w = pw + v * pstride;
        for (t = 0; t < taps; t++) {
            const uint8_t *const *at = a + t * RT_QGEMM_MR;
            for (kb = 0; kb < c4; kb++, w += RT_QGEMM_KB)
                for (i = 0; i < mr; i++) {
                    const uint8_t *x = at[i] + kb * 4;
                    int32_t *o = acc + i * RT_QGEMM_NT + v * RT_QGEMM_NR;
                    for (j = 0; j < RT_QGEMM_NR; j++) {
                        int32_t s = 0;
                        for (tt = 0; tt < 4; tt++) s += (int32_t)x[tt] * (int32_t)w[j * 4 + tt];
                        o[j] += s;
                    }
                }
        }
    }
#endif
}

#if defined(RT_QGEMM_AVX2)
/* A reduction of one AVX2 chunk (taps*c4 <= RT_QGEMM_AVX2_KC blocks) against all np panels
 * (k4 blocks each, from wp), requantized from registers: the rows are widened once for
 * every panel, and each pair of passes (8 columns) goes from the hadd'ed sums plus the bias
 * straight to rt_qrq8v, with no accumulator rows. The int32 sum of a column is the same
 * (bias + the one chunk's sum), so are the bytes. Columns nbase+n of y (rows ystride
 * apart; residual rows r likewise, or NULL), n < mg. */
RT_API void rt_qgemm_avx2_panels1(int mr, const uint8_t *const *a, int64_t taps, int64_t c4,
                                  const int8_t *wp, int64_t np, int64_t mg, int64_t nbase,
                                  const RtQRequant *q, const uint8_t *r, uint8_t *y, int64_t ystride) {
    uint64_t xb[RT_QGEMM_MR][RT_QGEMM_AVX2_KC];
    int64_t k4 = taps * c4, p;
    int i, qp;
    rt_qgemm_avx2_widen(mr, c4, a, 0, k4, xb);
    for (p = 0; p < np; p++)
        for (qp = 0; qp < 2; qp++) {
            int64_t n0 = p * RT_QGEMM_NR + qp * 8;
            const int8_t *w = wp + p * k4 * RT_QGEMM_KB + qp * 32;
            __m256i h0[4], h1[4];
            RtQRqV k;
            int ncols;
            if (n0 >= mg) break;
            ncols = (int)(mg - n0 < 8 ? mg - n0 : 8);
            rt_qgemm_avx2_pass(k4, xb, w, h0);
            if (ncols > 4) rt_qgemm_avx2_pass(k4, xb, w + 16, h1);
            else h1[0] = h1[1] = h1[2] = h1[3] = _mm256_setzero_si256();
            if (ncols == 8) {
                __m256i bias = _mm256_loadu_si256((const __m256i *)(const void *)(q->bias + nbase + n0));
                rt_qrq_prep(&k, q, nbase + n0, r != NULL);
                for (i = 0; i < mr; i++) {
                    /* row i's 8 sums: the low (even i) or high halves of both passes */
                    __m256i s = i & 1 ? _mm256_permute2x128_si256(h0[i >> 1], h1[i >> 1], 0x31)
                                      : _mm256_permute2x128_si256(h0[i >> 1], h1[i >> 1], 0x20);
                    rt_qrq8v(&k, _mm256_add_epi32(s, bias), r ? r + i * ystride + nbase + n0 : NULL,
                             y + i * ystride + nbase + n0);
                }
            } else {
                int32_t acc[8] = {0};
                __m256i bias;
                memcpy(acc, q->bias + nbase + n0, (size_t)ncols * 4);
                bias = _mm256_loadu_si256((const __m256i *)(const void *)acc);
                for (i = 0; i < mr; i++) {
                    __m256i s = i & 1 ? _mm256_permute2x128_si256(h0[i >> 1], h1[i >> 1], 0x31)
                                      : _mm256_permute2x128_si256(h0[i >> 1], h1[i >> 1], 0x20);
                    _mm256_storeu_si256((__m256i *)(void *)acc, _mm256_add_epi32(s, bias));
                    rt_qrequant_row(acc, nbase + n0, ncols, q, r ? r + i * ystride + nbase + n0 : NULL,
                                    y + i * ystride + nbase + n0);
                }
            }
        }
}
#endif

#if defined(RT_QGEMM_AVX512)
/* The int32 lanes of the even and odd lanes' 64-bit products pe, po back in lane order: the
 * high words (rt_qhigh32: the int32 form's floor(t / 2^32)) or the low words (rt_qlow32),
 * each one vpshufd merged into the other vector under a mask, where a shift and a blend
 * took two operations (in every requantized vector: 4 of the 64 a 64-channel pixel took). */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
RT_API __m512i rt_qhigh32(__m512i pe, __m512i po) {
    return _mm512_mask_shuffle_epi32(po, (__mmask16)0x5555, pe, _MM_PERM_CDAB);
}

#if defined(__GNUC__)
__attribute__((always_inline))
#endif
RT_API __m512i rt_qlow32(__m512i pe, __m512i po) {
    return _mm512_mask_shuffle_epi32(pe, (__mmask16)0xAAAA, po, _MM_PERM_CCAA);
}

/* The requantization of 16 channels from a zmm of sums, rt_qrq8v's int32 form ("fold":
 * every shift in 33..53 and y_zp in 0..255, checked per 16 channels by rt_qrqz_prep; the
 * same bounds and the same value, see rt_qrq_prep). */
typedef struct RtQRqZ {
    __m512i m, mo, rm, rmo, rzp, s32, k32, lo32, hi32;
    __m512i rd; /* the int32 form's lift of shifts below 33: the residual's left shift, d = 33 - s */
    __m512i she, sho, rnde, rndo, lo64, hi64, yzp32; /* the int64 form (rt_qrqz_wide) */
    int fold;
    __mmask16 mask; /* the channels there (a last panel of fewer than 16) */
} RtQRqZ;

/* inlined always: GCC -O3 (not -O2) left it and rt_qrqz_wide out of line in the GEMM and
 * the depthwise kernel, and the struct then goes through memory at every row tile and panel:
 * MobileNetV2 int8 ran ~10% slower at -O3 than at -O2 (issue 13; bench/int8/inline.sh) */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
RT_API void rt_qrqz_prep(RtQRqZ *k, const RtQRequant *q, int64_t n0, int ncols, int res) {
    __m512i sh, d, one = _mm512_set1_epi64(1);
    __mmask16 lift;
    /* a last panel of fewer channels reads only theirs (masked loads; the other lanes
     * are zeros, computed and not written) */
    __mmask16 m = ncols >= RT_QGEMM_NR ? (__mmask16)0xFFFF : (__mmask16)((1u << ncols) - 1);
    k->mask = m;
    sh = _mm512_cvtepu8_epi32(_mm512_castsi512_si128(_mm512_maskz_loadu_epi8((__mmask64)m, q->shift + n0)));
    k->m = _mm512_maskz_loadu_epi32(m, q->mult + n0);
    k->mo = _mm512_srli_epi64(k->m, 32);
    k->rm = res ? _mm512_maskz_loadu_epi32(m, q->rmult + n0) : _mm512_setzero_si512();
    k->rmo = _mm512_srli_epi64(k->rm, 32);
    k->rzp = _mm512_set1_epi32(q->r_zp);
    /* Shifts s of 26..32 (the residual layers': qplan caps their shifts below 32) join the
     * int32 form where the multiplier takes the missing bits: with d = 33 - s,
     * t 2^d = acc (mult << d) + ((r - r_zp) << d) rmult exactly, and floor((t + 2^(s-1)) /
     * 2^s) = floor((t 2^d + 2^32) / 2^33), the form's value at shift 33. mult << d stays
     * below 2^31 (checked: ResNet-50's residual layers have mult below 2^24), |r - r_zp| << d
     * below 2^15, so |t 2^d| < 2^62 + 2^46 and the high word plus k32 fits in int32 (the
     * bound rt_qrq_prep states, with room). The int64 form's 11 operations a vector become
     * the int32 form's 4 and one shift of the residual. */
    lift = _mm512_mask_cmplt_epi32_mask(m, sh, _mm512_set1_epi32(33));
    k->fold = ((_mm512_cmplt_epi32_mask(sh, _mm512_set1_epi32(26)) | _mm512_cmpgt_epi32_mask(sh, _mm512_set1_epi32(53))) & m) == 0 &&
              q->y_zp >= 0 && q->y_zp <= 255;
    d = _mm512_setzero_si512();
    if (lift && k->fold) { /* only there: the prep runs once per panel of a one-row tile (rt_qgemm_vnni_row1) */
        d = _mm512_maskz_sub_epi32(lift, _mm512_set1_epi32(33), sh);
        if (_mm512_mask_cmpgt_epu32_mask(m, k->m, _mm512_srlv_epi32(_mm512_set1_epi32(0x7FFFFFFF), d)))
            k->fold = 0;
        else {
            sh = _mm512_max_epi32(sh, _mm512_set1_epi32(33));
            k->m = _mm512_sllv_epi32(k->m, d);
            k->mo = _mm512_srli_epi64(k->m, 32);
        }
    }
    /* only the terms of the form taken: the prep runs per row tile and panel, which for
     * short reductions (16-64 channels) costs as much as a fifth of the tile */
    if (k->fold) {
        k->rd = d;
        k->s32 = _mm512_sub_epi32(sh, _mm512_set1_epi32(32));
        k->lo32 = _mm512_set1_epi32(q->lo);
        k->hi32 = _mm512_set1_epi32(q->hi);
        k->k32 = _mm512_add_epi32(_mm512_sllv_epi32(_mm512_set1_epi32(1), _mm512_sub_epi32(sh, _mm512_set1_epi32(33))),
                                  _mm512_sllv_epi32(_mm512_set1_epi32(q->y_zp), k->s32));
        return;
    }
    k->rd = _mm512_setzero_si512();
    k->she = _mm512_and_si512(sh, _mm512_set1_epi64(0xFFFFFFFF));
    k->sho = _mm512_srli_epi64(sh, 32);
    k->rnde = _mm512_sllv_epi64(one, _mm512_sub_epi64(k->she, one));
    k->rndo = _mm512_sllv_epi64(one, _mm512_sub_epi64(k->sho, one));
    k->lo64 = _mm512_set1_epi64((int64_t)q->lo - q->y_zp);
    k->hi64 = _mm512_set1_epi64((int64_t)q->hi - q->y_zp);
    k->yzp32 = _mm512_set1_epi32(q->y_zp);
}

/* y[0..16) from the sums a (k->fold set; residual r[0..16) or NULL) */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
RT_API void rt_qrqz(const RtQRqZ *k, __m512i a, const uint8_t *r, uint8_t *y) {
    __m512i pe = _mm512_mul_epi32(a, k->m);
    __m512i po = _mm512_mul_epi32(_mm512_srli_epi64(a, 32), k->mo);
    __m512i v;
    if (r) {
        __m512i rv = _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)r)), k->rzp);
        rv = _mm512_sllv_epi32(rv, k->rd); /* the lift of shifts below 33 (rt_qrqz_prep) */
        pe = _mm512_add_epi64(pe, _mm512_mul_epi32(rv, k->rm));
        po = _mm512_add_epi64(po, _mm512_mul_epi32(_mm512_srli_epi64(rv, 32), k->rmo));
    }
    v = rt_qhigh32(pe, po);
    v = _mm512_srav_epi32(_mm512_add_epi32(v, k->k32), k->s32);
    v = _mm512_min_epi32(_mm512_max_epi32(v, k->lo32), k->hi32);
    {
        __m128i b = _mm512_cvtepi32_epi8(v);
#if defined(__GNUC__)
        /* vpmovdb into a register, then a store: GCC otherwise fuses the two into vpmovdb
         * to memory, which Zen 4 runs several times slower */
        __asm__("" : "+v"(b));
#endif
        _mm_storeu_si128((__m128i *)(void *)y, b);
    }
}

/* The same from the int64 products for any shifts (1..62):
 * the rounding term and an arithmetic shift in int64 lanes (vpsravq: floor, as
 * rt_qround_shift), the clamp in int64 around the zero point (floor + y_zp in [lo, hi]
 * is floor in [lo - y_zp, hi - y_zp]), then the low words. The residual layers need it:
 * qplan caps their shifts below 32 (both multipliers share one). */
#if defined(__GNUC__)
__attribute__((always_inline)) /* as rt_qrqz_prep: -O3 left it out of line */
#endif
RT_API void rt_qrqz_wide(const RtQRqZ *k, __m512i a, const uint8_t *r, uint8_t *y) {
    __m512i pe = _mm512_mul_epi32(a, k->m);
    __m512i po = _mm512_mul_epi32(_mm512_srli_epi64(a, 32), k->mo);
    __m512i v;
    __m128i b;
    if (r) {
        __m512i rv = _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)r)), k->rzp);
        pe = _mm512_add_epi64(pe, _mm512_mul_epi32(rv, k->rm));
        po = _mm512_add_epi64(po, _mm512_mul_epi32(_mm512_srli_epi64(rv, 32), k->rmo));
    }
    pe = _mm512_srav_epi64(_mm512_add_epi64(pe, k->rnde), k->she);
    po = _mm512_srav_epi64(_mm512_add_epi64(po, k->rndo), k->sho);
    pe = _mm512_min_epi64(_mm512_max_epi64(pe, k->lo64), k->hi64);
    po = _mm512_min_epi64(_mm512_max_epi64(po, k->lo64), k->hi64);
    v = _mm512_add_epi32(rt_qlow32(pe, po), k->yzp32);
    b = _mm512_cvtepi32_epi8(v);
#if defined(__GNUC__)
    __asm__("" : "+v"(b)); /* as rt_qrqz */
#endif
    _mm_storeu_si128((__m128i *)(void *)y, b);
}

/* A panel of fewer than 16 channels (k->mask): its residual read and its output written
 * through 16-byte buffers with masked loads and stores. */
RT_API void rt_qrqz_part(const RtQRqZ *k, __m512i a, const uint8_t *r, uint8_t *y) {
    uint8_t rb[RT_QGEMM_NR], yb[RT_QGEMM_NR];
    if (r) _mm_storeu_si128((__m128i *)(void *)rb, _mm512_castsi512_si128(_mm512_maskz_loadu_epi8((__mmask64)k->mask, r)));
    if (k->fold)
        rt_qrqz(k, a, r ? rb : NULL, yb);
    else
        rt_qrqz_wide(k, a, r ? rb : NULL, yb);
    _mm512_mask_storeu_epi8(y, (__mmask64)k->mask, _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(const void *)yb)));
}

/* The sums of a row (a zmm) to y: rt_qrqz where the shifts allow it (k->fold), else
 * rt_qrqz_wide, rt_qrqz_part for a short panel; inlined always (out of line, the sums
 * go through memory; GCC stopped inlining it once it held the short panel's code) */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
RT_API void rt_qrqz_any(const RtQRqZ *k, __m512i a, const uint8_t *r, uint8_t *y) {
    if (k->mask != 0xFFFF)
        rt_qrqz_part(k, a, r, y);
    else if (k->fold)
        rt_qrqz(k, a, r, y);
    else
        rt_qrqz_wide(k, a, r, y);
}

/* One panel (v = 0) or two (v = 0, 1) against the tile's 8 rows, all in registers: the
 * accumulators c<row><v> start at the bias, and per block of 4 reduction values one weight
 * load per panel, one broadcast per row and a vpdpbusd per row and panel (8 x 2: 16 zmm
 * accumulators, 16 vpdpbusd per 10 loads; written out row by row since GCC at -O2 does not
 * unroll the row loop and then keeps the accumulators in memory). */
#define RT_QV_ROW1(i) c##i##0 = _mm512_dpbusd_epi32(c##i##0, _mm512_set1_epi32(rt_qload4(p##i + kb * 4)), b0)
#define RT_QV_ROW2(i)                                                   \
    do {                                                                \
        __m512i x_ = _mm512_set1_epi32(rt_qload4(p##i + kb * 4));       \
        c##i##0 = _mm512_dpbusd_epi32(c##i##0, x_, b0);                 \
        c##i##1 = _mm512_dpbusd_epi32(c##i##1, x_, b1);                 \
    } while (0)
#define RT_QV_ROWS(ROW) \
    ROW(0);             \
    ROW(1);             \
    ROW(2);             \
    ROW(3);             \
    ROW(4);             \
    ROW(5);             \
    ROW(6);             \
    ROW(7)
#define RT_QV_TAPS(BODY)                                                                       \
    for (t = 0; t < taps; t++) {                                                               \
        const uint8_t *const *at = a + t * RT_QGEMM_MR;                                        \
        const uint8_t *p0 = at[0], *p1 = at[mr > 1 ? 1 : 0], *p2 = at[mr > 2 ? 2 : 0],         \
                      *p3 = at[mr > 3 ? 3 : 0], *p4 = at[mr > 4 ? 4 : 0], *p5 = at[mr > 5 ? 5 : 0], \
                      *p6 = at[mr > 6 ? 6 : 0], *p7 = at[mr > 7 ? 7 : 0];                      \
        for (kb = 0; kb < c4; kb++, w0 += RT_QGEMM_KB, w1 += RT_QGEMM_KB) {                    \
            BODY;                                                                              \
        }                                                                                      \
    }

/* One tile's int32 sums over every tap and reduction block, from the bias: 8 rows of nv (1
 * or 2) vectors of 16 output channels into out[row][vector]; w0 and w1 advance over the
 * panels as RT_QV_TAPS walks them. */
#define RT_QV_TILE(out, bias, nv)                                                                  \
    do {                                                                                           \
        if ((nv) == 2) {                                                                           \
            __m512i c00 = bias[0], c10 = c00, c20 = c00, c30 = c00, c40 = c00, c50 = c00,          \
                    c60 = c00, c70 = c00;                                                          \
            __m512i c01 = bias[1], c11 = c01, c21 = c01, c31 = c01, c41 = c01, c51 = c01,          \
                    c61 = c01, c71 = c01;                                                          \
            RT_QV_TAPS({                                                                           \
                __m512i b0 = _mm512_loadu_si512((const void *)w0);                                 \
                __m512i b1 = _mm512_loadu_si512((const void *)w1);                                 \
                RT_QV_ROWS(RT_QV_ROW2);                                                            \
            })                                                                                     \
            out[0][0] = c00; out[1][0] = c10; out[2][0] = c20; out[3][0] = c30;                    \
            out[4][0] = c40; out[5][0] = c50; out[6][0] = c60; out[7][0] = c70;                    \
            out[0][1] = c01; out[1][1] = c11; out[2][1] = c21; out[3][1] = c31;                    \
            out[4][1] = c41; out[5][1] = c51; out[6][1] = c61; out[7][1] = c71;                    \
        } else {                                                                                   \
            __m512i c00 = bias[0], c10 = c00, c20 = c00, c30 = c00, c40 = c00, c50 = c00,          \
                    c60 = c00, c70 = c00;                                                          \
            RT_QV_TAPS({                                                                           \
                __m512i b0 = _mm512_loadu_si512((const void *)w0);                                 \
                RT_QV_ROWS(RT_QV_ROW1);                                                            \
            })                                                                                     \
            out[0][0] = c00; out[1][0] = c10; out[2][0] = c20; out[3][0] = c30;                    \
            out[4][0] = c40; out[5][0] = c50; out[6][0] = c60; out[7][0] = c70;                    \
        }                                                                                          \
    } while (0)

/* One row (a matrix-vector product, as a classifier's Gemm at batch 1, or the last row
 * tile of 1 pixel of a 7x7 output) of taps x c4 blocks, a[t*RT_QGEMM_MR] the row of tap t,
 * against all np panels: 4 panels at a time (a last group of fewer repeats panel 0's
 * weights, not written), the even and odd blocks in separate accumulators (8 chains: the
 * vpdpbusd latency hidden), instead of the 8-row tile, whose 7 other rows would be
 * repeats. Columns nbase+n of y, n < mg; the same int32 sums, the same bytes. */
#if defined(__GNUC__)
__attribute__((always_inline)) /* as rt_qgemm_vnni_band */
#endif
RT_API void rt_qgemm_vnni_row1(const uint8_t *const *a, int64_t taps, int64_t c4, const int8_t *wp, int64_t np,
                               int64_t mg, int64_t nbase, const RtQRequant *q, const uint8_t *r, uint8_t *y) {
    int64_t p, kb, t, stride = taps * c4 * RT_QGEMM_KB;
    for (p = 0; p < np; p += 4) {
        int nv = np - p < 4 ? (int)(np - p) : 4, v;
        const int8_t *w0 = wp + p * stride;
        const int8_t *w1 = nv > 1 ? w0 + stride : w0, *w2 = nv > 2 ? w0 + 2 * stride : w0;
        const int8_t *w3 = nv > 3 ? w0 + 3 * stride : w0;
        __m512i e0 = _mm512_setzero_si512(), e1 = e0, e2 = e0, e3 = e0, o0 = e0, o1 = e0, o2 = e0, o3 = e0;
        __m512i sum[4];
        for (t = 0; t < taps; t++) {
            const uint8_t *at = a[t * RT_QGEMM_MR];
            for (kb = 0; kb + 2 <= c4; kb += 2) {
                const int64_t off = (t * c4 + kb) * RT_QGEMM_KB;
                __m512i x = _mm512_set1_epi32(rt_qload4(at + kb * 4)), x1 = _mm512_set1_epi32(rt_qload4(at + kb * 4 + 4));
                e0 = _mm512_dpbusd_epi32(e0, x, _mm512_loadu_si512((const void *)(w0 + off)));
                e1 = _mm512_dpbusd_epi32(e1, x, _mm512_loadu_si512((const void *)(w1 + off)));
                e2 = _mm512_dpbusd_epi32(e2, x, _mm512_loadu_si512((const void *)(w2 + off)));
                e3 = _mm512_dpbusd_epi32(e3, x, _mm512_loadu_si512((const void *)(w3 + off)));
                o0 = _mm512_dpbusd_epi32(o0, x1, _mm512_loadu_si512((const void *)(w0 + off + RT_QGEMM_KB)));
                o1 = _mm512_dpbusd_epi32(o1, x1, _mm512_loadu_si512((const void *)(w1 + off + RT_QGEMM_KB)));
                o2 = _mm512_dpbusd_epi32(o2, x1, _mm512_loadu_si512((const void *)(w2 + off + RT_QGEMM_KB)));
                o3 = _mm512_dpbusd_epi32(o3, x1, _mm512_loadu_si512((const void *)(w3 + off + RT_QGEMM_KB)));
            }
            if (kb < c4) {
                const int64_t off = (t * c4 + kb) * RT_QGEMM_KB;
                __m512i x = _mm512_set1_epi32(rt_qload4(at + kb * 4));
                e0 = _mm512_dpbusd_epi32(e0, x, _mm512_loadu_si512((const void *)(w0 + off)));
                e1 = _mm512_dpbusd_epi32(e1, x, _mm512_loadu_si512((const void *)(w1 + off)));
                e2 = _mm512_dpbusd_epi32(e2, x, _mm512_loadu_si512((const void *)(w2 + off)));
                e3 = _mm512_dpbusd_epi32(e3, x, _mm512_loadu_si512((const void *)(w3 + off)));
            }
        }
        sum[0] = _mm512_add_epi32(e0, o0);
        sum[1] = _mm512_add_epi32(e1, o1);
        sum[2] = _mm512_add_epi32(e2, o2);
        sum[3] = _mm512_add_epi32(e3, o3);
        for (v = 0; v < nv; v++) {
            int64_t n0 = (p + v) * RT_QGEMM_NR, nc = mg - n0;
            int32_t b[RT_QGEMM_NR] = {0};
            RtQRqZ k;
            if (nc > RT_QGEMM_NR) nc = RT_QGEMM_NR;
            memcpy(b, q->bias + nbase + n0, (size_t)nc * 4);
            rt_qrqz_prep(&k, q, nbase + n0, (int)nc, r != NULL);
            rt_qrqz_any(&k, _mm512_add_epi32(sum[v], _mm512_loadu_si512((const void *)b)), r ? r + nbase + n0 : NULL,
                        y + nbase + n0);
        }
    }
}

/* The close that rt_qrqz_v and rt_qdw_zrq share: the even and odd lanes' 64-bit terms pe, po
 * (product and residual term) to int32 with the zero point: the folded form (fold: the
 * high words, one 32-bit add and shift) or rounding, shift and clamp in 64 bits. */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
RT_API __m512i rt_qrq_close(__m512i pe, __m512i po, int fold, __m512i k32, __m512i s32, __m512i rnde, __m512i rndo,
                            __m512i she, __m512i sho, __m512i lo64, __m512i hi64, __m512i yzp32) {
    if (fold)
        return _mm512_srav_epi32(_mm512_add_epi32(rt_qhigh32(pe, po), k32), s32);
    pe = _mm512_srav_epi64(_mm512_add_epi64(pe, rnde), she);
    po = _mm512_srav_epi64(_mm512_add_epi64(po, rndo), sho);
    pe = _mm512_min_epi64(_mm512_max_epi64(pe, lo64), hi64);
    po = _mm512_min_epi64(_mm512_max_epi64(po, lo64), hi64);
    return _mm512_add_epi32(rt_qlow32(pe, po), yzp32);
}

/* The int32 outputs (zero point added; not yet clamped by the int32 form) of one row's 16
 * channels, as rt_qrqz (fold, k->fold's value) or rt_qrqz_wide computes them, for packing
 * (rt_qrqz_2x2). */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
RT_API __m512i rt_qrqz_v(const RtQRqZ *k, __m512i a, const uint8_t *r, int fold) {
    __m512i pe = _mm512_mul_epi32(a, k->m);
    __m512i po = _mm512_mul_epi32(_mm512_srli_epi64(a, 32), k->mo);
    if (r) {
        __m512i rv = _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)r)), k->rzp);
        if (fold) rv = _mm512_sllv_epi32(rv, k->rd); /* as rt_qrqz */
        pe = _mm512_add_epi64(pe, _mm512_mul_epi32(rv, k->rm));
        po = _mm512_add_epi64(po, _mm512_mul_epi32(_mm512_srli_epi64(rv, 32), k->rmo));
    }
    return rt_qrq_close(pe, po, fold, k->k32, k->s32, k->rnde, k->rndo, k->she, k->sho, k->lo64, k->hi64,
                        k->yzp32);
}

/* Two rows of two full panels (32 channels each) to bytes at once: the four int32 vectors
 * (rt_qrqz_v) packed with saturation (vpackssdw, vpackuswb: monotone, so the clamp to [lo,
 * hi] inside 0..255 after them is the same clamp), one vpermd back to channel order, one
 * clamp for 64 outputs, two 32-byte stores: 8 operations where four rt_qrqz tails take 20.
 * y0, y1 (and r0, r1 or NULL): the rows' first channels. fold: both panels' form, a constant
 * where the caller knows it (one form's code, not two behind a branch per vector), or -1:
 * each panel's own (k->fold). */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
RT_API void rt_qrqz_2x2(const RtQRqZ *k0, const RtQRqZ *k1, __m512i a00, __m512i a01, __m512i a10, __m512i a11,
                        const uint8_t *r0, const uint8_t *r1, uint8_t *y0, uint8_t *y1, __m512i lo, __m512i hi,
                        int fold) {
    /* after the packs, dword 4l+t of a 128-bit lane l holds: t=0 row 0 ch 4l..4l+3, t=1 row 0
     * ch 16+4l.., t=2 row 1 ch 4l.., t=3 row 1 ch 16+4l.. */
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    int f0 = fold < 0 ? k0->fold : fold, f1 = fold < 0 ? k1->fold : fold;
    __m512i v00 = rt_qrqz_v(k0, a00, r0, f0), v01 = rt_qrqz_v(k1, a01, r0 ? r0 + RT_QGEMM_NR : NULL, f1);
    __m512i v10 = rt_qrqz_v(k0, a10, r1, f0), v11 = rt_qrqz_v(k1, a11, r1 ? r1 + RT_QGEMM_NR : NULL, f1);
    __m512i b = _mm512_packus_epi16(_mm512_packs_epi32(v00, v01), _mm512_packs_epi32(v10, v11));
    b = _mm512_min_epu8(_mm512_max_epu8(_mm512_permutexvar_epi32(order, b), lo), hi);
    _mm256_storeu_si256((__m256i *)(void *)y0, _mm512_castsi512_si256(b));
    _mm256_storeu_si256((__m256i *)(void *)y1, _mm512_extracti64x4_epi64(b, 1));
}

/* Four rows of one full panel (16 channels) at once, as rt_qrqz_2x2 (the same vpermd: after
 * the packs dword 4l+t of lane l is row t's channels 4l..4l+3; fold likewise); four 16-byte
 * stores. */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
RT_API void rt_qrqz_4x1(const RtQRqZ *k, __m512i a0, __m512i a1, __m512i a2, __m512i a3, const uint8_t *r,
                        uint8_t *y, int64_t stride, __m512i lo, __m512i hi, int fold) {
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    int f = fold < 0 ? k->fold : fold;
    __m512i v0 = rt_qrqz_v(k, a0, r, f), v1 = rt_qrqz_v(k, a1, r ? r + stride : NULL, f);
    __m512i v2 = rt_qrqz_v(k, a2, r ? r + 2 * stride : NULL, f), v3 = rt_qrqz_v(k, a3, r ? r + 3 * stride : NULL, f);
    __m512i b = _mm512_packus_epi16(_mm512_packs_epi32(v0, v1), _mm512_packs_epi32(v2, v3));
    b = _mm512_min_epu8(_mm512_max_epu8(_mm512_permutexvar_epi32(order, b), lo), hi);
    _mm_storeu_si128((__m128i *)(void *)y, _mm512_castsi512_si128(b));
    _mm_storeu_si128((__m128i *)(void *)(y + stride), _mm512_extracti32x4_epi32(b, 1));
    _mm_storeu_si128((__m128i *)(void *)(y + 2 * stride), _mm512_extracti32x4_epi32(b, 2));
    _mm_storeu_si128((__m128i *)(void *)(y + 3 * stride), _mm512_extracti32x4_epi32(b, 3));
}

/* A row tile (mr <= 8 rows; rows past mr repeat row 0 and are not written) against all np
 * panels, requantized from registers row by row: columns nbase+n of y (rows ystride apart;
 * residual rows r likewise, or NULL), n < mg. Every layer but the short 1x1s takes this
 * form, not rt_qgemm_vnni_band's: the band's loop over tiles and packed requantization, run
 * for single tiles, made ResNet-50's 3x3 and long 1x1 layers 3-8% slower and its 7x7 stem
 * 7% (bench/int8/nodeab.sh, per node, minima; the packed rows alone in this form: 2%, the
 * products in an always-inline helper shared with the band: 1%, stem 3%, so the products
 * are written out in both). The int32 sums are the exact ones of rt_qgemm_tile plus the
 * bias, so the bytes are those of every other path. */
RT_API void rt_qgemm_vnni_panels(int mr, const uint8_t *const *a, int64_t taps, int64_t c4,
                                 const int8_t *wp, int64_t np, int64_t mg, int64_t nbase,
                                 const RtQRequant *q, const uint8_t *r, uint8_t *y, int64_t ystride) {
    int64_t k4 = taps * c4, pp, t, kb;
    if (mr == 1) {
        rt_qgemm_vnni_row1(a, taps, c4, wp, np, mg, nbase, q, r, y);
        return;
    }
    for (pp = 0; pp < np; pp += 2) {
        int nv = np - pp >= 2 ? 2 : 1, v, i;
        int64_t n0 = pp * RT_QGEMM_NR;
        const int8_t *w0 = wp + pp * k4 * RT_QGEMM_KB, *w1 = w0 + k4 * RT_QGEMM_KB;
        __m512i out[RT_QGEMM_MR][2], bias[2];
        for (v = 0; v < nv; v++) {
            int64_t nc = mg - n0 - v * RT_QGEMM_NR;
            int32_t b[RT_QGEMM_NR] = {0};
            memcpy(b, q->bias + nbase + n0 + v * RT_QGEMM_NR, (size_t)(nc < RT_QGEMM_NR ? nc : RT_QGEMM_NR) * 4);
            bias[v] = _mm512_loadu_si512((const void *)b);
        }
        RT_QV_TILE(out, bias, nv);
        for (v = 0; v < nv; v++) {
            int64_t nv0 = n0 + v * RT_QGEMM_NR, nc = mg - nv0;
            RtQRqZ k;
            if (nc > RT_QGEMM_NR) nc = RT_QGEMM_NR;
            rt_qrqz_prep(&k, q, nbase + nv0, (int)nc, r != NULL);
            for (i = 0; i < mr; i++)
                rt_qrqz_any(&k, out[i][v], r ? r + i * ystride + nbase + nv0 : NULL, y + i * ystride + nbase + nv0);
        }
    }
}

/* The requantization of one tile of rt_qgemm_vnni_band (out: its sums, rows yo.. of y):
 * rows two at a time where both panels are full (rt_qrqz_2x2), four of one full panel
 * (rt_qrqz_4x1), the rest one by one; fold as rt_qrqz_2x2's. */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
RT_API void rt_qgemm_vnni_band_rq(const RtQRqZ *kq, int nv, int mr, __m512i out[RT_QGEMM_MR][2], const uint8_t *r,
                                  uint8_t *y, int64_t yo, int64_t ystride, __m512i lo8, __m512i hi8, int fold) {
    int i = 0, v, t;
    if (nv == 2 && kq[0].mask == 0xFFFF && kq[1].mask == 0xFFFF) /* rows two at a time, packed */
        for (; i + 2 <= mr; i += 2)
            rt_qrqz_2x2(&kq[0], &kq[1], out[i][0], out[i][1], out[i + 1][0], out[i + 1][1],
                        r ? r + yo + i * ystride : NULL, r ? r + yo + (i + 1) * ystride : NULL, y + yo + i * ystride,
                        y + yo + (i + 1) * ystride, lo8, hi8, fold);
    for (v = 0; v < nv; v++) {
        int64_t yv = yo + v * RT_QGEMM_NR;
        t = i;
        if (kq[v].mask == 0xFFFF) /* a single full panel (or one beside a part panel): rows four at a time */
            for (; t + 4 <= mr; t += 4)
                rt_qrqz_4x1(&kq[v], out[t][v], out[t + 1][v], out[t + 2][v], out[t + 3][v],
                            r ? r + yv + t * ystride : NULL, y + yv + t * ystride, ystride, lo8, hi8, fold);
        for (; t < mr; t++)
            rt_qrqz_any(&kq[v], out[t][v], r ? r + yv + t * ystride : NULL, y + yv + t * ystride);
    }
}

/* Rows of a 1x1 layer with a short reduction (up to RT_QGEMM_MR * RT_QGEMM_BAND: tiles of
 * mr <= 8 rows, tile u's row pointers at a0 + u*taps*RT_QGEMM_MR; rows past a tile's mr
 * repeat its row 0 and are not written) against all np panels, as rt_qgemm_vnni_panels, but
 * per panel pair the requantization terms are made once for all the tiles (short
 * reductions spend as much on them as on the products), and rows are requantized two
 * (rt_qrqz_2x2) or four (rt_qrqz_4x1) at a time. The same int32 sums, the same bytes. */
#if defined(__GNUC__)
/* inlined always: with two callers (rt_qconv2d_band, rt_qconv2d_ringband) GCC left it and
 * rt_qgemm_vnni_row1 out of line, and MobileNetV2's classifier Gemm and 7x7 1x1 layers ran
 * 5-60% slower (bench/int8/nodeab.sh, minima) */
__attribute__((always_inline))
#endif
RT_API void rt_qgemm_vnni_band(int rows, const uint8_t *const *a0, int64_t taps, int64_t c4,
                               const int8_t *wp, int64_t np, int64_t mg, int64_t nbase,
                               const RtQRequant *q, const uint8_t *r, uint8_t *y, int64_t ystride) {
    int64_t k4 = taps * c4, pp, t, kb;
    const __m512i lo8 = _mm512_set1_epi8((char)q->lo), hi8 = _mm512_set1_epi8((char)q->hi);
    if (rows == 1) {
        rt_qgemm_vnni_row1(a0, taps, c4, wp, np, mg, nbase, q, r, y);
        return;
    }
    for (pp = 0; pp < np; pp += 2) {
        int nv = np - pp >= 2 ? 2 : 1, v, u;
        int64_t n0 = pp * RT_QGEMM_NR;
        __m512i bias[2];
        RtQRqZ kq[2];
        for (v = 0; v < nv; v++) {
            int64_t nv0 = n0 + v * RT_QGEMM_NR, nc = mg - nv0;
            int32_t b[RT_QGEMM_NR] = {0};
            if (nc > RT_QGEMM_NR) nc = RT_QGEMM_NR;
            memcpy(b, q->bias + nbase + nv0, (size_t)nc * 4);
            bias[v] = _mm512_loadu_si512((const void *)b);
        }
        for (u = 0; u * RT_QGEMM_MR < rows; u++) {
            const uint8_t *const *a = a0 + u * taps * RT_QGEMM_MR;
            const int8_t *w0 = wp + pp * k4 * RT_QGEMM_KB, *w1 = w0 + k4 * RT_QGEMM_KB;
            int mr = rows - u * RT_QGEMM_MR < RT_QGEMM_MR ? rows - u * RT_QGEMM_MR : RT_QGEMM_MR;
            int64_t yo = u * RT_QGEMM_MR * ystride + nbase + n0;
            __m512i out[RT_QGEMM_MR][2];
            RT_QV_TILE(out, bias, nv);
            if (u == 0) /* after the first tile's products, as a single tile had them */
                for (v = 0; v < nv; v++) {
                    int64_t nv0 = n0 + v * RT_QGEMM_NR, nc = mg - nv0;
                    rt_qrqz_prep(&kq[v], q, nbase + nv0, (int)(nc < RT_QGEMM_NR ? nc : RT_QGEMM_NR), r != NULL);
                }
            /* one form's code where both panels take it (the residual layers the int64 one) */
            if (kq[0].fold && (nv == 1 || kq[1].fold))
                rt_qgemm_vnni_band_rq(kq, nv, mr, out, r, y, yo, ystride, lo8, hi8, 1);
            else if (!kq[0].fold && (nv == 1 || !kq[1].fold))
                rt_qgemm_vnni_band_rq(kq, nv, mr, out, r, y, yo, ystride, lo8, hi8, 0);
            else
                rt_qgemm_vnni_band_rq(kq, nv, mr, out, r, y, yo, ystride, lo8, hi8, -1);
        }
    }
}
#undef RT_QV_ROW1
#undef RT_QV_ROW2
#undef RT_QV_ROWS
#undef RT_QV_TAPS
#undef RT_QV_TILE
#endif

/* The correction of the NEON path: acc[i][j] += 128 * colsum[j] (nothing elsewhere). */
RT_API void rt_qgemm_colsum_fix(int mr, int n, const int32_t *colsum, int32_t *acc) {
#if defined(RT_QGEMM_NEON)
    int i, j;
    for (i = 0; i < mr; i++)
        for (j = 0; j < n; j++) acc[i * RT_QGEMM_NT + j] += 128 * colsum[j];
#else
    (void)mr;
    (void)n;
    (void)colsum;
    (void)acc;
#endif
}

#endif
