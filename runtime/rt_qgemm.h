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

#define RT_QGEMM_MR 8  /* rows (output pixels) per tile */
#define RT_QGEMM_NR 16 /* output channels per panel: one zmm of int32 */
#define RT_QGEMM_NT 32 /* columns per tile: two panels */
#define RT_QGEMM_KB 64 /* bytes of one packed block: NR columns x 4 */

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
    return (uint8_t)(v < q->lo ? q->lo : v > q->hi ? q->hi : v);
}

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
    for (; j < n; j++)
        y[j] = rt_qrequant1(acc[j], q->mult[n0 + j], r ? q->rmult[n0 + j] : 0,
                            r ? (int)r[j] - q->r_zp : 0, q->shift[n0 + j], q);
}

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
    /* 4 columns x 4 k (16 bytes) widen to 16 int16; vpmaddwd against the row's 4 values
     * repeated gives, per column, two partial sums (k 0-1 and 2-3), added at the end. */
    __m256i c[RT_QGEMM_MR][4];
    int i, v, q;
    int64_t t, kb;
    for (v = 0; v < nv; v++) {
        for (i = 0; i < RT_QGEMM_MR; i++) c[i][0] = c[i][1] = c[i][2] = c[i][3] = _mm256_setzero_si256();
        {
            const int8_t *w = pw + v * pstride;
            for (t = 0; t < taps; t++) {
                const uint8_t *const *at = a + t * RT_QGEMM_MR;
                for (kb = 0; kb < c4; kb++, w += RT_QGEMM_KB) {
                    __m256i b[4];
                    for (q = 0; q < 4; q++)
                        b[q] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(w + 16 * q)));
                    for (i = 0; i < mr; i++) {
                        __m256i x = _mm256_cvtepu8_epi16(_mm_set1_epi32(rt_qload4(at[i] + kb * 4)));
                        for (q = 0; q < 4; q++) c[i][q] = _mm256_add_epi32(c[i][q], _mm256_madd_epi16(x, b[q]));
                    }
                }
            }
        }
        for (i = 0; i < mr; i++)
            for (q = 0; q < 4; q++) {
                /* lanes (col j: k01, k23) for 4 columns -> 4 sums */
                int32_t part[8], *o = acc + i * RT_QGEMM_NT + v * RT_QGEMM_NR + q * 4;
                int j;
                _mm256_storeu_si256((__m256i *)(void *)part, c[i][q]);
                for (j = 0; j < 4; j++) o[j] += part[2 * j] + part[2 * j + 1];
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
