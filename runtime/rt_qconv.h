/* rt_qconv.h: int8 convolution (NHWC, 2-D) and matrix product over packed weights, on the
 * microkernel of rt_qgemm.h. A convolution is an indirect GEMM: for each tile of
 * RT_QGEMM_MR output pixels, a table of row pointers per kernel tap (a tap in the padding
 * points at a row of input zero points, so the zero-point correction folded into the bias
 * at compile time holds at the borders), then the panels of output channels. Channel
 * counts that are not a multiple of 4 (an RGB first layer) copy the tile's rows into a
 * small buffer padded to 4. Depthwise convolutions (one channel per group) take their own
 * loop along channels. C99; no allocation (buffers on the stack, bounded below). */
#ifndef KILN_RT_QCONV_H
#define KILN_RT_QCONV_H

#include "rt_qgemm.h"

#define RT_QCONV_MAX_C 4096     /* input channels of one convolution (the padding row) */
#define RT_QCONV_MAX_TAPS 128   /* kernel taps (KH*KW): 11x11 fits */
#define RT_QCONV_COPY_MAX 16384 /* bytes of a tile's copied rows (channels not a multiple of 4) */
#define RT_QDW_PIX 16           /* output pixels of a depthwise chunk (AVX2) */

typedef struct RtQConv2d {
    int64_t n, h, w, c;            /* input (N,H,W,C) */
    int64_t oh, ow, m;             /* output (N,OH,OW,M) */
    int64_t kh, kw, sh, sw, dh, dw; /* kernel, strides, dilations */
    int64_t ph, pw;                /* leading pads */
    int64_t group;
    int64_t c4; /* blocks of 4 channels per tap: ceil(C/group / 4) */
    int64_t np; /* panels of RT_QGEMM_NR output channels per group */
} RtQConv2d;

/* colsum[j] of the packed weights (the trailer, read bytewise: the blob is untyped) */
RT_API void rt_qcolsum(const int8_t *trailer, int64_t n0, int n, int32_t *out) {
    int j;
    for (j = 0; j < n; j++) memcpy(&out[j], trailer + (n0 + j) * 4, 4);
}

/* One row tile against every panel of one group: rows' pointers per tap in a (taps x MR),
 * panels at wp (k4 blocks each), columns nbase.. nbase+mg of the output rows y[i*ystride]
 * (residual rows r[i*ystride] or NULL). */
RT_API void rt_qgemm_panels(int mr, const uint8_t *const *a, int64_t taps, int64_t c4,
                            const int8_t *wp, const int8_t *colsum, int64_t np, int64_t mg,
                            int64_t nbase, const RtQRequant *q, const uint8_t *r, uint8_t *y,
                            int64_t ystride) {
    int32_t acc[RT_QGEMM_MR * RT_QGEMM_NT];
    int32_t cs[RT_QGEMM_NT];
    int64_t k4 = taps * c4, pp;
    int i, j;
#if defined(RT_QGEMM_AVX512)
    (void)colsum;
    (void)cs;
    (void)acc;
    (void)pp;
    (void)i;
    (void)j;
    (void)k4;
    rt_qgemm_vnni_panels(mr, a, taps, c4, wp, np, mg, nbase, q, r, y, ystride);
    return;
#endif
#if defined(RT_QGEMM_AVX2)
    if (k4 <= RT_QGEMM_AVX2_KC) {
        (void)colsum;
        (void)cs;
        (void)acc;
        rt_qgemm_avx2_panels1(mr, a, taps, c4, wp, np, mg, nbase, q, r, y, ystride);
        return;
    }
#endif
    for (pp = 0; pp < np; pp += 2) {
        int nv = np - pp >= 2 ? 2 : 1;
        int64_t n0 = pp * RT_QGEMM_NR;
        int ncols = (int)(mg - n0 < RT_QGEMM_NT ? mg - n0 : RT_QGEMM_NT);
        for (i = 0; i < mr; i++) {
            memcpy(acc + i * RT_QGEMM_NT, q->bias + nbase + n0, (size_t)ncols * 4);
            for (j = ncols; j < RT_QGEMM_NT; j++) acc[i * RT_QGEMM_NT + j] = 0;
        }
        rt_qgemm_tile(mr, nv, taps, c4, a, wp + pp * k4 * RT_QGEMM_KB, k4 * RT_QGEMM_KB, acc);
#if defined(RT_QGEMM_NEON)
        rt_qcolsum(colsum, n0, ncols, cs);
        rt_qgemm_colsum_fix(mr, ncols, cs, acc);
#else
        (void)colsum;
        (void)cs;
#endif
        rt_qrequant_tile(acc, mr, nbase + n0, ncols, q, r ? r + nbase + n0 : NULL, y + nbase + n0, ystride);
    }
}

/* The input rows of a convolution whose channels are not a multiple of 4 (an RGB first
 * layer), one group: each row read is copied once, padded to c4*4 bytes a pixel with the
 * zero point and, along x, with the padding columns of zero points, into a ring of
 * RT_QCONV_RING_ROWS slots, so a tap's row is a pointer into the ring (the taps along x of
 * one kernel row follow each other there: one run for rt_qgemm_tile's widening) instead of
 * a copy per pixel and tap. Rows past the input's are rows of zero points. */
#define RT_QCONV_RING_ROWS 64
typedef struct RtQRing {
    uint8_t *buf;    /* rows slots x rw*cb bytes */
    int64_t rows;    /* slots: the most input rows one tile of output pixels reads, rounded
                      * up to a power of two where that fits (a mask, not a division, finds
                      * a row's slot), else mask -1 */
    int64_t mask;
    int64_t rw, cb;  /* padded width in pixels, bytes a pixel */
    int64_t tag[RT_QCONV_RING_ROWS]; /* the input row in a slot */
} RtQRing;

/* Whether the ring fits bytes of buf (then set up), for g with group 1. */
RT_API int rt_qring_init(RtQRing *ring, const RtQConv2d *g, uint8_t *buf, int64_t bytes) {
    int64_t ekh = (g->kh - 1) * g->dh + 1, ekw = (g->kw - 1) * g->dw + 1, i;
    int64_t span = (RT_QGEMM_MR - 1 + g->ow - 1) / g->ow + 1; /* output rows of one tile */
    if (span > g->oh) span = g->oh;
    ring->rows = (span - 1) * g->sh + ekh;
    ring->rw = (g->ow - 1) * g->sw + ekw;
    ring->cb = g->c4 * 4;
    ring->buf = buf;
    if (g->group != 1 || ring->rows > RT_QCONV_RING_ROWS || ring->rows * ring->rw * ring->cb > bytes) return 0;
    for (i = 1; i < ring->rows; i *= 2) {
    }
    ring->mask = -1;
    if (i <= RT_QCONV_RING_ROWS && i * ring->rw * ring->cb <= bytes) {
        ring->rows = i;
        ring->mask = i - 1;
    }
    for (i = 0; i < ring->rows; i++) ring->tag[i] = INT64_MIN;
    return 1;
}

/* The slot holding input row iy of image b (filled when it is not there yet). */
RT_API const uint8_t *rt_qring_row(RtQRing *ring, const RtQConv2d *g, const uint8_t *x, int32_t x_zp,
                                   int64_t b, int64_t iy) {
    int64_t s = ring->mask >= 0 ? iy & ring->mask : ((iy % ring->rows) + ring->rows) % ring->rows, j, c;
    uint8_t *dst = ring->buf + s * ring->rw * ring->cb;
    if (ring->tag[s] != iy) {
        /* the sizes in locals: the byte stores may alias the structs, which made GCC
         * reload them for every byte */
        const int64_t cb = ring->cb, C = g->c, pw = g->pw, w0 = pw > 0 ? pw : 0;
        const int64_t w1 = pw + g->w < ring->rw ? pw + g->w : ring->rw;
        ring->tag[s] = iy;
        memset(dst, x_zp, (size_t)(ring->rw * cb));
        if (iy >= 0 && iy < g->h) {
            const uint8_t *src = x + ((b * g->h + iy) * g->w + (w0 - pw)) * C;
            for (j = w0; j < w1; j++, src += C)
                for (c = 0; c < C; c++) dst[j * cb + c] = src[c];
        }
    }
    return dst;
}

/* y = requant(conv(x - x_zp, w) + bias [+ residual]): x (N,H,W,C), wp packed (rt_qgemm.h),
 * r (N,OH,OW,M) or NULL, y (N,OH,OW,M). */
RT_API void rt_qconv2d(const RtQConv2d *g, const uint8_t *x, int32_t x_zp, const int8_t *wp,
                       const RtQRequant *q, const uint8_t *r, uint8_t *y) {
    const uint8_t *ptr[RT_QCONV_MAX_TAPS * RT_QGEMM_MR];
    uint8_t padrow[RT_QCONV_MAX_C + 4];
    uint8_t copy[RT_QCONV_COPY_MAX];
    RtQRing ring;
    int64_t cg = g->c / g->group, mg = g->m / g->group, taps = g->kh * g->kw;
    int64_t k4 = taps * g->c4, P = g->oh * g->ow;
    const int8_t *trailer = wp + g->group * g->np * k4 * RT_QGEMM_KB;
    int copying = cg % 4 != 0, ringed, runs;
    memset(&ring, 0, sizeof ring);
    ringed = copying && rt_qring_init(&ring, g, copy, (int64_t)sizeof copy);
    /* In the ring the taps along x of one kernel row (dilation 1) are one run of kw*c4
     * blocks, which is also their order in the packed weights (kb = (ky*kw + kx)*c4 + c/4):
     * the GEMM takes kh taps of kw*c4 blocks, one row pointer per kernel row. */
    runs = ringed && g->dw == 1;
    int64_t b, p0, gi, t;
    int i;
    memset(padrow, x_zp, sizeof padrow);
    for (b = 0; b < g->n; b++) {
        int64_t ty = 0, tx = 0; /* the tile's first pixel, kept (no division per pixel) */
        if (ringed)
            for (t = 0; t < ring.rows; t++) ring.tag[t] = INT64_MIN;
        for (p0 = 0; p0 < P; p0 += RT_QGEMM_MR) {
            int mr = (int)(P - p0 < RT_QGEMM_MR ? P - p0 : RT_QGEMM_MR);
            for (gi = 0; gi < g->group; gi++) {
                int64_t oy = ty, ox = tx;
                for (i = 0; i < mr; i++, ox++) {
                    int64_t ky, kx;
                    if (ox == g->ow) {
                        ox = 0;
                        oy++;
                    }
                    for (ky = 0, t = 0; ky < g->kh; ky++) {
                        int64_t iy = oy * g->sh - g->ph + ky * g->dh;
                        if (ringed) {
                            const uint8_t *row = rt_qring_row(&ring, g, x, x_zp, b, iy) + ox * g->sw * ring.cb;
                            if (runs) {
                                ptr[ky * RT_QGEMM_MR + i] = row;
                                continue;
                            }
                            for (kx = 0; kx < g->kw; kx++, t++) ptr[t * RT_QGEMM_MR + i] = row + kx * g->dw * ring.cb;
                            continue;
                        }
                        for (kx = 0; kx < g->kw; kx++, t++) {
                            int64_t ix = ox * g->sw - g->pw + kx * g->dw;
                            const uint8_t *src =
                                iy >= 0 && iy < g->h && ix >= 0 && ix < g->w
                                    ? x + ((b * g->h + iy) * g->w + ix) * g->c + gi * cg
                                    : padrow;
                            if (copying) { /* one row's taps end to end (rt_qgemm_tile) */
                                uint8_t *dst = copy + (i * taps + t) * g->c4 * 4;
                                int64_t c;
                                for (c = 0; c < cg; c++) dst[c] = src[c];
                                for (; c < g->c4 * 4; c++) dst[c] = (uint8_t)x_zp;
                                src = dst;
                            }
                            ptr[t * RT_QGEMM_MR + i] = src;
                        }
                    }
                }
                rt_qgemm_panels(mr, ptr, runs ? g->kh : taps, runs ? g->kw * g->c4 : g->c4,
                                wp + gi * g->np * k4 * RT_QGEMM_KB,
                                trailer + gi * g->np * RT_QGEMM_NR * 4, g->np, mg, gi * mg, q,
                                r ? r + (b * P + p0) * g->m : NULL, y + (b * P + p0) * g->m,
                                g->m);
            }
            for (tx += RT_QGEMM_MR; tx >= g->ow; tx -= g->ow) ty++;
        }
    }
}

/* y = requant(a @ w^T + bias): a (rows, K) uint8, wp packed with one tap of c4 blocks
 * (K <= c4*4), y (rows, N). */
RT_API void rt_qgemm_rows(int64_t rows, int64_t K, int64_t c4, int64_t np, int64_t N,
                          const uint8_t *a, int32_t a_zp, const int8_t *wp, const RtQRequant *q,
                          uint8_t *y) {
    const uint8_t *ptr[RT_QGEMM_MR];
    uint8_t copy[RT_QCONV_COPY_MAX];
    const int8_t *trailer = wp + np * c4 * RT_QGEMM_KB;
    int copying = K % 4 != 0;
    int64_t r0;
    int i;
    for (r0 = 0; r0 < rows; r0 += RT_QGEMM_MR) {
        int mr = (int)(rows - r0 < RT_QGEMM_MR ? rows - r0 : RT_QGEMM_MR);
        for (i = 0; i < mr; i++) {
            const uint8_t *src = a + (r0 + i) * K;
            if (copying) {
                uint8_t *dst = copy + i * c4 * 4;
                memset(dst, a_zp, (size_t)(c4 * 4));
                memcpy(dst, src, (size_t)K);
                src = dst;
            }
            ptr[i] = src;
        }
        rt_qgemm_panels(mr, ptr, 1, c4, wp, trailer, np, N, 0, q, NULL, y + r0 * N, N);
    }
}

#if defined(RT_QGEMM_AVX512) && defined(__AVX512VBMI__)
#define RT_QDW_COLS 64 /* input columns of one chunk of RT_QDW_PIX output pixels */
/* Depthwise on vpdpbusd, for kernels of up to 4 rows: per input column of a chunk of
 * output pixels and block of 16 channels, the column's kernel rows (4 loads of 16 bytes,
 * rows past the kernel's or in the padding read the row of zero points) go into one zmm,
 * and one vpermb makes each channel's 4 rows an int32 lane; each output pixel then adds
 * one vpdpbusd per kernel column (the weights of that column's rows permuted alike, zero
 * past kh), so a column built once serves the kw pixels that read it (3 for a 3x3 stride
 * 1 kernel) instead of a shuffle per tap and pixel. The 16 sums of a pixel stay in one
 * register and are requantized from it (rt_qrqz). Returns 0 (nothing done) for kernels of
 * more rows or chunks wider than RT_QDW_COLS columns. */
RT_API int rt_qdw_cols(const RtQConv2d *g, const uint8_t *x, const int8_t *w, const RtQRequant *q,
                       const uint8_t *r, uint8_t *y, const uint8_t *padrow) {
    /* byte 4c + t of the result = byte 16t + c of the source */
    const __m512i idx = _mm512_set_epi8(
        63, 47, 31, 15, 62, 46, 30, 14, 61, 45, 29, 13, 60, 44, 28, 12, 59, 43, 27, 11, 58, 42, 26, 10, 57,
        41, 25, 9, 56, 40, 24, 8, 55, 39, 23, 7, 54, 38, 22, 6, 53, 37, 21, 5, 52, 36, 20, 4, 51, 35, 19, 3,
        50, 34, 18, 2, 49, 33, 17, 1, 48, 32, 16, 0);
    __m512i qz[RT_QDW_COLS], wq[RT_QCONV_MAX_TAPS];
    int32_t acc[RT_QGEMM_NR];
    const uint8_t *rp[4], *cp[RT_QDW_COLS][4]; /* the rows of a column, at channel 0 */
    int64_t C = g->c, b, oy, x0, c, np, p, j, ky, kx, t;
    if (g->kh > 4 || g->kw > RT_QCONV_MAX_TAPS || (RT_QDW_PIX - 1) * g->sw + (g->kw - 1) * g->dw + 1 > RT_QDW_COLS)
        return 0;
    for (b = 0; b < g->n; b++)
        for (oy = 0; oy < g->oh; oy++) {
            for (ky = 0; ky < 4; ky++) {
                int64_t iy = oy * g->sh - g->ph + ky * g->dh;
                rp[ky] = ky < g->kh && iy >= 0 && iy < g->h ? x + (b * g->h + iy) * g->w * C : NULL;
            }
            for (x0 = 0; x0 < g->ow; x0 += RT_QDW_PIX) {
                int64_t ix0 = x0 * g->sw - g->pw, span;
                np = g->ow - x0 < RT_QDW_PIX ? g->ow - x0 : RT_QDW_PIX;
                span = (np - 1) * g->sw + (g->kw - 1) * g->dw + 1;
                for (j = 0; j < span; j++) {
                    int64_t ix = ix0 + j;
                    int inside = ix >= 0 && ix < g->w;
                    for (ky = 0; ky < 4; ky++) cp[j][ky] = inside && rp[ky] ? rp[ky] + ix * C : padrow;
                }
                for (c = 0; c + 16 <= C; c += 16) {
                    RtQRqZ k;
                    int64_t o = ((b * g->oh + oy) * g->ow + x0) * C + c;
                    for (kx = 0; kx < g->kw; kx++) {
                        __m128i v[4];
                        for (ky = 0; ky < 4; ky++)
                            v[ky] = ky < g->kh ? _mm_loadu_si128((const __m128i *)(const void *)(w + (ky * g->kw + kx) * C + c))
                                               : _mm_setzero_si128();
                        wq[kx] = _mm512_permutexvar_epi8(
                            idx, _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(v[1], v[0])),
                                                    _mm256_set_m128i(v[3], v[2]), 1));
                    }
                    for (j = 0; j < span; j++) {
                        const uint8_t *const *s4 = cp[j];
                        qz[j] = _mm512_permutexvar_epi8(
                            idx, _mm512_inserti64x4(
                                     _mm512_castsi256_si512(_mm256_inserti128_si256(
                                         _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(s4[0] + c))),
                                         _mm_loadu_si128((const __m128i *)(const void *)(s4[1] + c)), 1)),
                                     _mm256_inserti128_si256(
                                         _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(s4[2] + c))),
                                         _mm_loadu_si128((const __m128i *)(const void *)(s4[3] + c)), 1),
                                     1));
                    }
                    rt_qrqz_prep(&k, q, c, 16, r != NULL);
                    for (p = 0; p < np; p++, o += C) {
                        const __m512i *col = qz + p * g->sw;
                        __m512i a = _mm512_loadu_si512((const void *)(q->bias + c));
                        for (kx = 0; kx < g->kw; kx++) a = _mm512_dpbusd_epi32(a, col[kx * g->dw], wq[kx]);
                        rt_qrqz_any(&k, a, r ? r + o : NULL, y + o);
                    }
                }
                for (; c < C; c++) /* the last channels, one at a time */
                    for (p = 0; p < np; p++) {
                        int64_t o = ((b * g->oh + oy) * g->ow + x0 + p) * C + c;
                        int32_t sum = q->bias[c];
                        for (ky = 0; ky < g->kh; ky++)
                            for (kx = 0; kx < g->kw; kx++) {
                                int64_t ix = (x0 + p) * g->sw - g->pw + kx * g->dw;
                                t = ky * g->kw + kx;
                                sum += (int32_t)(rp[ky] && ix >= 0 && ix < g->w ? rp[ky][ix * C + c] : padrow[c]) *
                                       (int32_t)w[t * C + c];
                            }
                        acc[0] = sum;
                        rt_qrequant_row(acc, c, 1, q, r ? r + o : NULL, y + o);
                    }
            }
        }
    return 1;
}
#endif

/* Depthwise: y[.., c] = requant(sum_taps (x - x_zp)[.., c] * w[t][c] + bias[c]) with w
 * (KH*KW, C) int8 (backend/qplan.c lays it so), r residual or NULL. */
RT_API void rt_qdwconv2d(const RtQConv2d *g, const uint8_t *x, int32_t x_zp, const int8_t *w,
                         const RtQRequant *q, const uint8_t *r, uint8_t *y) {
    int32_t acc[RT_QCONV_MAX_C];
    uint8_t padrow[RT_QCONV_MAX_C];
    int64_t C = g->c, b, oy, ky, kx, c;
    memset(padrow, x_zp, (size_t)C);
#if defined(RT_QGEMM_AVX512) && defined(__AVX512VBMI__)
    if (rt_qdw_cols(g, x, w, q, r, y, padrow)) return;
#endif
#if defined(RT_QGEMM_YMM)
    /* Two taps at a time: their bytes interleaved per channel and widened to int16 pairs,
     * so one vpmaddwd adds both taps' products of 8 channels exactly into int32. Pixels
     * go in chunks of RT_QDW_PIX along a row with a table of their taps' rows (a tap in the
     * padding points at a row of zero points); per chunk and block of 16 channels the
     * weights are widened once (an odd last tap pairs with a zero weight) and so are the
     * requantization terms, then each pixel keeps its 16 sums in two registers over all
     * taps and is requantized from them. */
    {
        const uint8_t *src[RT_QDW_PIX * RT_QCONV_MAX_TAPS];
        __m256i wv[(RT_QCONV_MAX_TAPS + 1) / 2][2];
        int64_t taps = g->kh * g->kw, pairs = (taps + 1) / 2, t, x0, np, p;
        for (b = 0; b < g->n; b++)
            for (oy = 0; oy < g->oh; oy++)
                for (x0 = 0; x0 < g->ow; x0 += RT_QDW_PIX) {
                    np = g->ow - x0 < RT_QDW_PIX ? g->ow - x0 : RT_QDW_PIX;
                    for (p = 0; p < np; p++)
                        for (ky = 0, t = 0; ky < g->kh; ky++)
                            for (kx = 0; kx < g->kw; kx++, t++) {
                                int64_t iy = oy * g->sh - g->ph + ky * g->dh;
                                int64_t ix = (x0 + p) * g->sw - g->pw + kx * g->dw;
                                src[p * taps + t] = iy >= 0 && iy < g->h && ix >= 0 && ix < g->w
                                                        ? x + ((b * g->h + iy) * g->w + ix) * C
                                                        : padrow;
                            }
                    for (c = 0; c + 16 <= C; c += 16) {
                        RtQRqV k0, k1;
                        int64_t o = ((b * g->oh + oy) * g->ow + x0) * C + c;
                        for (t = 0; t < pairs; t++) {
                            __m128i w0 = _mm_loadu_si128((const __m128i *)(const void *)(w + 2 * t * C + c));
                            __m128i w1 = 2 * t + 1 < taps ? _mm_loadu_si128((const __m128i *)(const void *)(w + (2 * t + 1) * C + c))
                                                          : _mm_setzero_si128();
                            wv[t][0] = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(w0, w1));
                            wv[t][1] = _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(w0, w1));
                        }
                        rt_qrq_prep(&k0, q, c, r != NULL);
                        rt_qrq_prep(&k1, q, c + 8, r != NULL);
                        for (p = 0; p < np; p++, o += C) {
                            const uint8_t *const *s = src + p * taps;
                            __m256i s0 = _mm256_loadu_si256((const __m256i *)(const void *)(q->bias + c));
                            __m256i s1 = _mm256_loadu_si256((const __m256i *)(const void *)(q->bias + c + 8));
                            for (t = 0; t < pairs; t++) {
                                __m128i xa = _mm_loadu_si128((const __m128i *)(const void *)(s[2 * t] + c));
                                __m128i xb = 2 * t + 1 < taps ? _mm_loadu_si128((const __m128i *)(const void *)(s[2 * t + 1] + c)) : xa;
                                s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(xa, xb)), wv[t][0]));
                                s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_unpackhi_epi8(xa, xb)), wv[t][1]));
                            }
                            rt_qrq8v(&k0, s0, r ? r + o : NULL, y + o);
                            rt_qrq8v(&k1, s1, r ? r + o + 8 : NULL, y + o + 8);
                        }
                    }
                    if (c < C)
                        for (p = 0; p < np; p++) {
                            const uint8_t *const *s = src + p * taps;
                            int64_t o = ((b * g->oh + oy) * g->ow + x0 + p) * C, cc;
                            for (cc = c; cc < C; cc++) {
                                int32_t sum = q->bias[cc];
                                for (t = 0; t < taps; t++) sum += (int32_t)s[t][cc] * (int32_t)w[t * C + cc];
                                acc[cc] = sum;
                            }
                            rt_qrequant_row(acc + c, c, C - c, q, r ? r + o + c : NULL, y + o + c);
                        }
                }
    }
#else
    int64_t ox;
    for (b = 0; b < g->n; b++)
        for (oy = 0; oy < g->oh; oy++)
            for (ox = 0; ox < g->ow; ox++) {
                int64_t o = ((b * g->oh + oy) * g->ow + ox) * C;
                const int8_t *wt = w;
                for (c = 0; c < C; c++) acc[c] = q->bias[c];
                for (ky = 0; ky < g->kh; ky++)
                    for (kx = 0; kx < g->kw; kx++, wt += C) {
                        int64_t iy = oy * g->sh - g->ph + ky * g->dh;
                        int64_t ix = ox * g->sw - g->pw + kx * g->dw;
                        const uint8_t *src = iy >= 0 && iy < g->h && ix >= 0 && ix < g->w
                                                 ? x + ((b * g->h + iy) * g->w + ix) * C
                                                 : padrow;
                        for (c = 0; c < C; c++) acc[c] += (int32_t)src[c] * (int32_t)wt[c];
                    }
                rt_qrequant_row(acc, 0, C, q, r ? r + o : NULL, y + o);
            }
#endif
}

/* ---- elementwise, table and pools ---- */

/* y = clamp(y_zp + round(((a - a_zp) * ma + (b - b_zp) * mb) / 2^shift)): QAdd of equal
 * shapes; ma, mb below 2^31. */
RT_API void rt_qadd(int64_t n, const uint8_t *a, int32_t a_zp, int32_t ma, const uint8_t *b,
                    int32_t b_zp, int32_t mb, int shift, int32_t y_zp, int32_t lo, int32_t hi,
                    uint8_t *y) {
    int64_t i;
    for (i = 0; i < n; i++) {
        int64_t t = (int64_t)((int32_t)a[i] - a_zp) * ma + (int64_t)((int32_t)b[i] - b_zp) * mb;
        int64_t v = rt_qround_shift(t, shift) + y_zp;
        y[i] = (uint8_t)(v < lo ? lo : v > hi ? hi : v);
    }
}

/* y = clamp(y_zp + round((a - a_zp) * (b - b_zp) * m / 2^shift)): QMul of equal shapes. */
RT_API void rt_qmul(int64_t n, const uint8_t *a, int32_t a_zp, const uint8_t *b, int32_t b_zp,
                    int32_t m, int shift, int32_t y_zp, uint8_t *y) {
    int64_t i;
    for (i = 0; i < n; i++) {
        int64_t t = (int64_t)((int32_t)a[i] - a_zp) * ((int32_t)b[i] - b_zp) * m;
        int64_t v = rt_qround_shift(t, shift) + y_zp;
        y[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
}

/* y = table[x]: any per-tensor function of one uint8 value, tabulated at compile time. */
RT_API void rt_qlut(int64_t n, const uint8_t *x, const uint8_t *table, uint8_t *y) {
    int64_t i;
    for (i = 0; i < n; i++) y[i] = table[x[i]];
}

/* Max pooling, NHWC, on the quantized values (same scale and zero point in and out);
 * padding never wins. */
RT_API void rt_qmaxpool2d(const RtQConv2d *g, const uint8_t *x, uint8_t *y) {
    int64_t C = g->c, b, oy, ox, ky, kx, c;
    for (b = 0; b < g->n; b++)
        for (oy = 0; oy < g->oh; oy++)
            for (ox = 0; ox < g->ow; ox++) {
                uint8_t *o = y + ((b * g->oh + oy) * g->ow + ox) * C;
                memset(o, 0, (size_t)C);
                for (ky = 0; ky < g->kh; ky++)
                    for (kx = 0; kx < g->kw; kx++) {
                        int64_t iy = oy * g->sh - g->ph + ky * g->dh;
                        int64_t ix = ox * g->sw - g->pw + kx * g->dw;
                        const uint8_t *s;
                        if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w) continue;
                        s = x + ((b * g->h + iy) * g->w + ix) * C;
                        c = 0;
#if defined(RT_QGEMM_YMM)
                        for (; c + 32 <= C; c += 32)
                            _mm256_storeu_si256((__m256i *)(void *)(o + c),
                                                _mm256_max_epu8(_mm256_loadu_si256((const __m256i *)(const void *)(o + c)),
                                                                _mm256_loadu_si256((const __m256i *)(const void *)(s + c))));
#endif
                        for (; c < C; c++) o[c] = s[c] > o[c] ? s[c] : o[c];
                    }
            }
}

/* Global average pooling, NHWC (N,H,W,C) -> (N,1,1,C): y = clamp(y_zp + round((sum -
 * HW*x_zp) * m / 2^shift)) with m/2^shift = x_scale / (HW * y_scale). */
RT_API void rt_qgavgpool(int64_t n, int64_t hw, int64_t C, const uint8_t *x, int32_t x_zp,
                         int32_t m, int shift, int32_t y_zp, uint8_t *y) {
    int32_t acc[RT_QCONV_MAX_C];
    int64_t b, p, c;
    for (b = 0; b < n; b++) {
        for (c = 0; c < C; c++) acc[c] = 0;
        for (p = 0; p < hw; p++)
            for (c = 0; c < C; c++) acc[c] += x[(b * hw + p) * C + c];
        for (c = 0; c < C; c++) {
            int64_t t = ((int64_t)acc[c] - hw * x_zp) * m;
            int64_t v = rt_qround_shift(t, shift) + y_zp;
            y[b * C + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
    }
}

#endif
