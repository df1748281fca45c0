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
#define RT_QCONV_BAND_C4 64     /* 1x1 layers of up to 256 input channels take bands of row tiles */
#define RT_QCONV_RINGBAND_KH 11 /* kernel rows of an RGB layer in bands (11x11 fits) */

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
 * layer), one group: each row read is copied once, padded to c4*4 bytes a pixel (with the
 * zero point, or any bytes: the packed weights past C are zeros) and, along x, with the
 * padding columns of zero points, into a ring of
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

/* Whether the ring fits bytes of buf (then set up) for runs of pix output pixels (a tile, or a
 * band of tiles), for g with group 1. */
RT_API int rt_qring_init(RtQRing *ring, const RtQConv2d *g, uint8_t *buf, int64_t bytes, int64_t pix) {
    int64_t ekh = (g->kh - 1) * g->dh + 1, ekw = (g->kw - 1) * g->dw + 1, i;
    int64_t span = (pix - 1 + g->ow - 1) / g->ow + 1; /* output rows of pix pixels */
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
            j = w0;
#if defined(RT_QGEMM_AVX512) && defined(__AVX512VBMI__)
            if (cb == 4) { /* 16 pixels a vpermb: byte 4p+t of the slot is byte C*p+t of the row,
                            * the bytes the word copies below take; while 64 bytes are left */
                uint8_t ib[64];
                __m512i idx;
                for (c = 0; c < 64; c++) ib[c] = (uint8_t)(C * (c / 4) + c % 4);
                idx = _mm512_loadu_si512((const void *)ib);
                for (; (w1 - j) * C >= 64; j += 16, src += 16 * C)
                    _mm512_storeu_si512((void *)(dst + j * 4), _mm512_permutexvar_epi8(idx, _mm512_loadu_si512((const void *)src)));
            }
#endif
            if (cb == 4) /* 1-3 channels (RGB): a pixel as one 4-byte copy, its bytes past C
                          * the next pixel's (their packed weights are zeros: any byte there
                          * adds nothing); the row's last pixels, whose word would end past the
                          * row (the input's end), bytewise. Byte by byte the copy took 30% of
                          * MobileNetV2's stem. */
                for (; (w1 - j) * C >= 4; j++, src += C) memcpy(dst + j * 4, src, 4);
            for (; j < w1; j++, src += C)
                for (c = 0; c < C; c++) dst[j * cb + c] = src[c];
        }
    }
    return dst;
}

#if defined(RT_QGEMM_AVX512)
/* A 1x1 layer of a short reduction (group g with channels a multiple of 4, at most
 * RT_QCONV_BAND_C4 blocks): RT_QGEMM_BAND row tiles a call of rt_qgemm_vnni_band (with
 * one tap, tile u's row pointers are rows u*MR.. of the table), so the requantization terms
 * of a panel pair are made once for 128 rows instead of 8. A function of its own: folded
 * into rt_qconv2d's loop, the band made GCC compile the RGB stems' ring path 5-9% slower. */
RT_API void rt_qconv2d_band(const RtQConv2d *g, const uint8_t *x, const uint8_t *padrow, const int8_t *wp,
                            const RtQRequant *q, const uint8_t *r, uint8_t *y) {
    const uint8_t *ptr[RT_QGEMM_MR * RT_QGEMM_BAND];
    int64_t cg = g->c / g->group, mg = g->m / g->group, P = g->oh * g->ow, b, p0, gi;
    int i;
    for (b = 0; b < g->n; b++) {
        int64_t ty = 0, tx = 0; /* the band's first pixel */
        for (p0 = 0; p0 < P; p0 += RT_QGEMM_MR * RT_QGEMM_BAND) {
            int rows = (int)(P - p0 < RT_QGEMM_MR * RT_QGEMM_BAND ? P - p0 : RT_QGEMM_MR * RT_QGEMM_BAND);
            for (gi = 0; gi < g->group; gi++) {
                int64_t oy = ty, ox = tx;
                for (i = 0; i < rows; i++, ox++) {
                    int64_t iy, ix;
                    if (ox == g->ow) {
                        ox = 0;
                        oy++;
                    }
                    iy = oy * g->sh - g->ph;
                    ix = ox * g->sw - g->pw;
                    ptr[i] = iy >= 0 && iy < g->h && ix >= 0 && ix < g->w ? x + ((b * g->h + iy) * g->w + ix) * g->c + gi * cg
                                                                         : padrow;
                }
                rt_qgemm_vnni_band(rows, ptr, 1, g->c4, wp + gi * g->np * g->c4 * RT_QGEMM_KB, g->np, mg, gi * mg, q,
                                     r ? r + (b * P + p0) * g->m : NULL, y + (b * P + p0) * g->m, g->m);
            }
            for (tx += rows; tx >= g->ow; tx -= g->ow) ty++;
        }
    }
}

/* An RGB first layer (the ring of rt_qring_row, sized for a band; dilation 1 along x: a
 * kernel row's taps one run of kw*c4 blocks) in bands of RT_QGEMM_BAND row tiles a call of
 * rt_qgemm_vnni_band, as rt_qconv2d_band: the requantization terms made once per band and
 * rows requantized two at a time (packed), where tile by tile rt_qgemm_vnni_panels made
 * them per tile and wrote each row's 16 outputs with a vpmovdb (MobileNetV2's 3x3 stem: 9
 * blocks of products a tile). A function of its own, as rt_qconv2d_band. */
RT_API void rt_qconv2d_ringband(const RtQConv2d *g, const uint8_t *x, int32_t x_zp, const int8_t *wp,
                                const RtQRequant *q, const uint8_t *r, uint8_t *y, RtQRing *ring) {
    const uint8_t *ptr[RT_QCONV_RINGBAND_KH * RT_QGEMM_MR * RT_QGEMM_BAND];
    const uint8_t *rowp[RT_QCONV_RINGBAND_KH]; /* kernel row ky's ring row for output row roy */
    int64_t P = g->oh * g->ow, b, p0, t, ky;
    int i;
    for (b = 0; b < g->n; b++) {
        int64_t ty = 0, tx = 0; /* the band's first pixel */
        for (t = 0; t < ring->rows; t++) ring->tag[t] = INT64_MIN;
        for (p0 = 0; p0 < P; p0 += RT_QGEMM_MR * RT_QGEMM_BAND) {
            int rows = (int)(P - p0 < RT_QGEMM_MR * RT_QGEMM_BAND ? P - p0 : RT_QGEMM_MR * RT_QGEMM_BAND);
            int64_t oy = ty, ox = tx, roy = INT64_MIN;
            for (i = 0; i < rows; i++, ox++) {
                /* row i of the band: tile i / MR, its row i % MR; per tile the taps' rows */
                const uint8_t **pt = ptr + (i / RT_QGEMM_MR) * g->kh * RT_QGEMM_MR + i % RT_QGEMM_MR;
                if (ox == g->ow) {
                    ox = 0;
                    oy++;
                }
                if (oy != roy) /* the ring holds every row the band reads (rt_qring_init) */
                    for (ky = 0, roy = oy; ky < g->kh; ky++)
                        rowp[ky] = rt_qring_row(ring, g, x, x_zp, b, oy * g->sh - g->ph + ky * g->dh);
                for (ky = 0; ky < g->kh; ky++) pt[ky * RT_QGEMM_MR] = rowp[ky] + ox * g->sw * ring->cb;
            }
            rt_qgemm_vnni_band(rows, ptr, g->kh, g->kw * g->c4, wp, g->np, g->m, 0, q, r ? r + (b * P + p0) * g->m : NULL,
                               y + (b * P + p0) * g->m, g->m);
            for (tx += rows; tx >= g->ow; tx -= g->ow) ty++;
        }
    }
}
#endif

/* y = requant(conv(x - x_zp, w) + bias [+ residual]): x (N,H,W,C), wp packed (rt_qgemm.h),
 * r (N,OH,OW,M) or NULL, y (N,OH,OW,M). */
RT_API void rt_qconv2d(const RtQConv2d *g, const uint8_t *x, int32_t x_zp, const int8_t *wp,
                       const RtQRequant *q, const uint8_t *r, uint8_t *y) {
    const uint8_t *ptr[RT_QCONV_MAX_TAPS * RT_QGEMM_MR];
    const uint8_t *rowp[RT_QCONV_MAX_TAPS]; /* kernel row ky's input row (NULL: padding) */
    uint8_t padrow[RT_QCONV_MAX_C + 4];
    uint8_t copy[RT_QCONV_COPY_MAX];
    RtQRing ring;
    int64_t cg = g->c / g->group, mg = g->m / g->group, taps = g->kh * g->kw;
    int64_t k4 = taps * g->c4, P = g->oh * g->ow;
    const int8_t *trailer = wp + g->group * g->np * k4 * RT_QGEMM_KB;
    int copying = cg % 4 != 0, ringed, runs;
    memset(&ring, 0, sizeof ring);
#if defined(RT_QGEMM_AVX512)
    if (copying && g->dw == 1 && g->kh <= RT_QCONV_RINGBAND_KH &&
        rt_qring_init(&ring, g, copy, (int64_t)sizeof copy, RT_QGEMM_MR * RT_QGEMM_BAND)) {
        rt_qconv2d_ringband(g, x, x_zp, wp, q, r, y, &ring);
        return;
    }
#endif
    ringed = copying && rt_qring_init(&ring, g, copy, (int64_t)sizeof copy, RT_QGEMM_MR);
    /* In the ring the taps along x of one kernel row (dilation 1) are one run of kw*c4
     * blocks, which is also their order in the packed weights (kb = (ky*kw + kx)*c4 + c/4):
     * the GEMM takes kh taps of kw*c4 blocks, one row pointer per kernel row. */
    runs = ringed && g->dw == 1;
    int64_t b, p0, gi, t;
    int i;
    memset(padrow, x_zp, sizeof padrow);
#if defined(RT_QGEMM_AVX512)
    if (taps == 1 && !copying && g->c4 <= RT_QCONV_BAND_C4) {
        rt_qconv2d_band(g, x, padrow, wp, q, r, y);
        return;
    }
#endif
    for (b = 0; b < g->n; b++) {
        int64_t ty = 0, tx = 0; /* the tile's first pixel, kept (no division per pixel) */
        if (ringed)
            for (t = 0; t < ring.rows; t++) ring.tag[t] = INT64_MIN;
        for (p0 = 0; p0 < P; p0 += RT_QGEMM_MR) {
            int mr = (int)(P - p0 < RT_QGEMM_MR ? P - p0 : RT_QGEMM_MR);
            for (gi = 0; gi < g->group; gi++) {
                int64_t oy = ty, ox = tx, roy = INT64_MIN; /* roy: the output row rowp is of */
                for (i = 0; i < mr; i++, ox++) {
                    int64_t ky, kx;
                    if (ox == g->ow) {
                        ox = 0;
                        oy++;
                    }
                    /* the kernel rows' input rows, once per output row of the tile instead
                     * of per pixel: the RGB stems' ring lookups (kh a pixel) and the other
                     * layers' row offsets and bounds */
                    if (oy != roy)
                        for (ky = 0, roy = oy; ky < g->kh; ky++) {
                            int64_t iy = oy * g->sh - g->ph + ky * g->dh;
                            rowp[ky] = ringed ? rt_qring_row(&ring, g, x, x_zp, b, iy)
                                       : iy >= 0 && iy < g->h ? x + (b * g->h + iy) * g->w * g->c + gi * cg
                                                              : NULL;
                        }
                    for (ky = 0, t = 0; ky < g->kh; ky++) {
                        if (ringed) {
                            const uint8_t *row = rowp[ky] + ox * g->sw * ring.cb;
                            if (runs) {
                                ptr[ky * RT_QGEMM_MR + i] = row;
                                continue;
                            }
                            for (kx = 0; kx < g->kw; kx++, t++) ptr[t * RT_QGEMM_MR + i] = row + kx * g->dw * ring.cb;
                            continue;
                        }
                        for (kx = 0; kx < g->kw; kx++, t++) {
                            int64_t ix = ox * g->sw - g->pw + kx * g->dw;
                            const uint8_t *src = rowp[ky] && ix >= 0 && ix < g->w ? rowp[ky] + ix * g->c : padrow;
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

#if defined(RT_QGEMM_AVX512) && defined(__AVX512VL__) /* the pairs' 32-byte loads and stores */
#define RT_QDW_ZPIX 32  /* output pixels of a chunk (AVX-512) at stride 1, half at stride 2
                         * (qlab against 16: stride 1 1.01-1.035x, 2 columns built twice a
                         * chunk; stride 2 at 32 pixels 0.96x) */
#define RT_QDW_ZCOLS 72 /* input columns of a chunk: 18 KB of interleaved columns, in L1 */
#define RT_QDW_ZKW 8    /* kernel columns */
#define RT_QDW_BAND 16  /* output rows that share one channel block's prepared terms and
                         * weight columns (qlab against 4: MobileNetV2's 7x7, 14x14 and
                         * 28x28 layers 1.05-1.07x, the larger ones 1.01-1.02x) */

/* Four rows of 64 bytes (a..d) as four zmm of int32 lanes, each lane one channel's 4 rows:
 * o[k] lane 4l+e = channel 16l + 4k + e (the in-lane unpacks' order). _mm512_packs_epi32
 * then _mm512_packus_epi16 of such four undo it: the bytes come back in channel order. */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
RT_API void rt_qdw_z4(__m512i a, __m512i b, __m512i c, __m512i d, __m512i *o) {
    __m512i ab0 = _mm512_unpacklo_epi8(a, b), ab1 = _mm512_unpackhi_epi8(a, b);
    __m512i cd0 = _mm512_unpacklo_epi8(c, d), cd1 = _mm512_unpackhi_epi8(c, d);
    o[0] = _mm512_unpacklo_epi16(ab0, cd0);
    o[1] = _mm512_unpackhi_epi16(ab0, cd0);
    o[2] = _mm512_unpacklo_epi16(ab1, cd1);
    o[3] = _mm512_unpackhi_epi16(ab1, cd1);
}

/* 64 int32 of channel order (4 zmm loads, mask m of 64 channels) in rt_qdw_z4's order:
 * o[k] 128-bit lane l = the loads' lane k of load l (a 4x4 transpose of 128-bit blocks).
 * pair: 32 channels, twice (loads 2 and 3 repeat 0 and 1; see rt_qdw_z). */
RT_API void rt_qdw_zperm(const int32_t *p, uint64_t m, int pair, __m512i *o) {
    __m512i n0 = _mm512_maskz_loadu_epi32((__mmask16)m, p), n1 = _mm512_maskz_loadu_epi32((__mmask16)(m >> 16), p + 16);
    __m512i n2 = pair ? n0 : _mm512_maskz_loadu_epi32((__mmask16)(m >> 32), p + 32);
    __m512i n3 = pair ? n1 : _mm512_maskz_loadu_epi32((__mmask16)(m >> 48), p + 48);
    __m512i t0 = _mm512_shuffle_i32x4(n0, n1, 0x44), t1 = _mm512_shuffle_i32x4(n0, n1, 0xEE);
    __m512i t2 = _mm512_shuffle_i32x4(n2, n3, 0x44), t3 = _mm512_shuffle_i32x4(n2, n3, 0xEE);
    o[0] = _mm512_shuffle_i32x4(t0, t2, 0x88);
    o[1] = _mm512_shuffle_i32x4(t0, t2, 0xDD);
    o[2] = _mm512_shuffle_i32x4(t1, t3, 0x88);
    o[3] = _mm512_shuffle_i32x4(t1, t3, 0xDD);
}

/* 64 bytes widened to int32 in rt_qdw_z4's order (unpacks with zero) */
RT_API void rt_qdw_zwiden(__m512i v, __m512i *o) {
    rt_qdw_z4(v, _mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(), o);
}

/* The terms of one block of 64 channels (or 32 twice: pair), in rt_qdw_z4's order: the bias,
 * the int32 form (fold, as rt_qrqz_prep) or the int64 one (rt_qrqz_wide), the residual's
 * multiplier. */
typedef struct RtQDwZ {
    __m512i bias[4], m[4], mo[4], rm[4], rmo[4], s32[4], k32[4];
    __m512i she[4], sho[4], rnde[4], rndo[4];
    __m512i lo64, hi64, yzp32, rzp, lo8, hi8;
    uint64_t mask; /* the channels there (pair: in both halves) */
    int fold, pair;
} RtQDwZ;

/* 64 bytes at p (mask m), or with pair 32 bytes at p and 32 at p2 (mask m's low half) */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
RT_API __m512i rt_qdw_zload(const void *p, const void *p2, uint64_t m, int pair) {
    if (pair)
        return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_maskz_loadu_epi8((__mmask32)m, p)),
                                  _mm256_maskz_loadu_epi8((__mmask32)m, p2), 1);
    return _mm512_maskz_loadu_epi8((__mmask64)m, p);
}

RT_API void rt_qdw_zprep(RtQDwZ *k, const RtQRequant *q, int64_t c0, int64_t nc, int pair, int res) {
    const __m512i one = _mm512_set1_epi64(1);
    uint64_t m = nc >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << nc) - 1;
    __m512i shb = rt_qdw_zload(q->shift + c0, q->shift + c0, m, pair), sh[4];
    int j;
    if (pair) m |= m << 32;
    k->mask = m;
    k->pair = pair;
    k->fold = (_mm512_mask_cmplt_epu8_mask((__mmask64)m, shb, _mm512_set1_epi8(33)) |
               _mm512_mask_cmpgt_epu8_mask((__mmask64)m, shb, _mm512_set1_epi8(53))) == 0 &&
              q->y_zp >= 0 && q->y_zp <= 255;
    rt_qdw_zwiden(shb, sh);
    rt_qdw_zperm(q->bias + c0, m, pair, k->bias);
    rt_qdw_zperm(q->mult + c0, m, pair, k->m);
    if (res) rt_qdw_zperm(q->rmult + c0, m, pair, k->rm);
    else k->rm[0] = k->rm[1] = k->rm[2] = k->rm[3] = _mm512_setzero_si512();
    k->rzp = _mm512_set1_epi32(q->r_zp);
    k->lo8 = _mm512_set1_epi8((char)q->lo);
    k->hi8 = _mm512_set1_epi8((char)q->hi);
    k->lo64 = _mm512_set1_epi64((int64_t)q->lo - q->y_zp);
    k->hi64 = _mm512_set1_epi64((int64_t)q->hi - q->y_zp);
    k->yzp32 = _mm512_set1_epi32(q->y_zp);
    for (j = 0; j < 4; j++) {
        k->mo[j] = _mm512_srli_epi64(k->m[j], 32);
        k->rmo[j] = res ? _mm512_srli_epi64(k->rm[j], 32) : _mm512_setzero_si512();
        if (k->fold) {
            k->s32[j] = _mm512_sub_epi32(sh[j], _mm512_set1_epi32(32));
            k->k32[j] = _mm512_add_epi32(_mm512_sllv_epi32(_mm512_set1_epi32(1), _mm512_sub_epi32(sh[j], _mm512_set1_epi32(33))),
                                         _mm512_sllv_epi32(_mm512_set1_epi32(q->y_zp), k->s32[j]));
            k->she[j] = k->sho[j] = k->rnde[j] = k->rndo[j] = _mm512_setzero_si512(); /* unused */
        } else {
            k->s32[j] = k->k32[j] = _mm512_setzero_si512(); /* unused */
            k->she[j] = _mm512_and_si512(sh[j], _mm512_set1_epi64(0xFFFFFFFF));
            k->sho[j] = _mm512_srli_epi64(sh[j], 32);
            k->rnde[j] = _mm512_sllv_epi64(one, _mm512_sub_epi64(k->she[j], one));
            k->rndo[j] = _mm512_sllv_epi64(one, _mm512_sub_epi64(k->sho[j], one));
        }
    }
}

/* One of a pixel's four sums (block j) requantized to int32 with the zero point, as rt_qrqz
 * (fold) or rt_qrqz_wide computes it; rv: the residual's lanes less r_zp, or NULL. */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
RT_API __m512i rt_qdw_zrq(const RtQDwZ *k, int j, __m512i a, const __m512i *rv) {
    __m512i pe = _mm512_mul_epi32(a, k->m[j]);
    __m512i po = _mm512_mul_epi32(_mm512_srli_epi64(a, 32), k->mo[j]);
    if (rv) {
        pe = _mm512_add_epi64(pe, _mm512_mul_epi32(rv[j], k->rm[j]));
        po = _mm512_add_epi64(po, _mm512_mul_epi32(_mm512_srli_epi64(rv[j], 32), k->rmo[j]));
    }
    return rt_qrq_close(pe, po, k->fold, k->k32[j], k->s32[j], k->rnde[j], k->rndo[j], k->she[j], k->sho[j], k->lo64,
                        k->hi64, k->yzp32);
}

/* The 64 outputs of one pixel from its four sums (rt_qdw_z4's order): each to int32 with the
 * zero point (rt_qdw_zrq), then packed to bytes with saturation (monotone, so the clamp to
 * [lo, hi] inside 0..255 after it is the same clamp) and stored (the channels there). Written
 * out per sum: GCC at -O2 keeps a loop over them, and the sums, in memory. */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
RT_API void rt_qdw_zstore(const RtQDwZ *k, __m512i a0, __m512i a1, __m512i a2, __m512i a3, const uint8_t *r,
                          const uint8_t *r2, uint8_t *y, uint8_t *y2) {
    __m512i rv[4], v0, v1, v2, v3, out;
    if (r) {
        const __m512i zero = _mm512_setzero_si512();
        __m512i b = rt_qdw_zload(r, r2, k->mask, k->pair);
        __m512i lo = _mm512_unpacklo_epi8(b, zero), hi = _mm512_unpackhi_epi8(b, zero);
        rv[0] = _mm512_sub_epi32(_mm512_unpacklo_epi16(lo, zero), k->rzp);
        rv[1] = _mm512_sub_epi32(_mm512_unpackhi_epi16(lo, zero), k->rzp);
        rv[2] = _mm512_sub_epi32(_mm512_unpacklo_epi16(hi, zero), k->rzp);
        rv[3] = _mm512_sub_epi32(_mm512_unpackhi_epi16(hi, zero), k->rzp);
        v0 = rt_qdw_zrq(k, 0, a0, rv);
        v1 = rt_qdw_zrq(k, 1, a1, rv);
        v2 = rt_qdw_zrq(k, 2, a2, rv);
        v3 = rt_qdw_zrq(k, 3, a3, rv);
    } else {
        v0 = rt_qdw_zrq(k, 0, a0, NULL);
        v1 = rt_qdw_zrq(k, 1, a1, NULL);
        v2 = rt_qdw_zrq(k, 2, a2, NULL);
        v3 = rt_qdw_zrq(k, 3, a3, NULL);
    }
    out = _mm512_packus_epi16(_mm512_packs_epi32(v0, v1), _mm512_packs_epi32(v2, v3));
    out = _mm512_min_epu8(_mm512_max_epu8(out, k->lo8), k->hi8);
    if (!k->pair) {
        _mm512_mask_storeu_epi8(y, (__mmask64)k->mask, out);
        return;
    }
    _mm256_mask_storeu_epi8(y, (__mmask32)k->mask, _mm512_castsi512_si256(out));
    if (y2) _mm256_mask_storeu_epi8(y2, (__mmask32)k->mask, _mm512_extracti64x4_epi64(out, 1));
}

/* Depthwise on vpdpbusd for kernels of up to 4 rows, 64 channels at a time: per input column
 * of a chunk of output pixels, the column's kernel rows (64 bytes each; rows past the kernel's
 * are zeros, rows and columns in the padding read the row of zero points) interleave into four
 * zmm of int32 lanes (rt_qdw_z4: 8 unpacks for 64 channels), each lane one channel's 4 rows;
 * each output pixel then adds one vpdpbusd per kernel column and zmm (the weights of that
 * kernel column interleaved alike, zero past kh), so a column built once serves the kw pixels
 * that read it (a 3x3 kernel at stride 1: and the pixel below, the column's fourth row in use,
 * see two below). The sums of a pixel stay in four registers, are requantized from them and
 * packed back to channel order (rt_qdw_zstore). The terms of a channel block are prepared once
 * per band of RT_QDW_BAND output rows. Returns 0 (nothing done) for kernels of more rows or
 * columns, or too wide for a chunk of one pixel. */
RT_API int rt_qdw_z(const RtQConv2d *g, const uint8_t *x, const int8_t *w, const RtQRequant *q,
                    const uint8_t *r, uint8_t *y, const uint8_t *padrow) {
    __m512i col[RT_QDW_ZCOLS][4], wq[RT_QDW_ZKW][4], wq2[3][4];
    __m512i w00, w01, w02, w03, w10, w11, w12, w13, w20, w21, w22, w23; /* wq[0..2] of a 3x3 */
    const __m512i zero = _mm512_setzero_si512();
    const uint8_t *rp[4]; /* the kernel rows at channel c0, or the row of zero points */
    int64_t rs[4];        /* their pixel strides: C, or 0 for the row of zero points */
    RtQDwZ k;
    int64_t C = g->c, ekw = (g->kw - 1) * g->dw + 1, pix, b, oy0, oy, c0, x0, np, p, j, ky, kx;
    int pair = 0, adj, rows2 = 0;
    /* a 3x3 kernel at stride 1 takes two output rows from one column of 4 input rows: the
     * first row's weights in its bytes 0-2 (rt_qdw_z4's rows a-c), the second's in 1-3, so a
     * column built (4 loads, 8 unpacks) serves 6 pixels' products instead of 3 (qlab: the
     * stride-1 layers 1.08-1.15x; the stride-2 ones, which keep single rows, 0.96x from GCC's
     * register choices: a copy of the function per form and the pair of rows out of line
     * were both slower everywhere) */
    const int two = g->kh == 3 && g->kw == 3 && g->sh == 1 && g->dh == 1 && g->dw == 1;
    if (g->kh > 4 || g->kw > RT_QDW_ZKW || ekw > RT_QDW_ZCOLS) return 0;
    for (kx = g->kw; kx < 3; kx++) wq[kx][0] = wq[kx][1] = wq[kx][2] = wq[kx][3] = zero; /* read, unused */
    pix = (RT_QDW_ZCOLS - ekw) / g->sw + 1;
    if (pix > (g->sw > 1 ? RT_QDW_ZPIX / 2 : RT_QDW_ZPIX)) pix = g->sw > 1 ? RT_QDW_ZPIX / 2 : RT_QDW_ZPIX;
    for (b = 0; b < g->n; b++)
        for (oy0 = 0; oy0 < g->oh; oy0 += RT_QDW_BAND)
            for (c0 = 0; c0 < C; c0 += pair ? 32 : 64) {
                int64_t nc = C - c0 < 64 ? C - c0 : 64, step;
                uint64_t mb;
                pair = nc <= 32;
                step = pair ? 2 : 1;
                /* 32 channels in all, stride 1 (MobileNetV2's 112x112x32 layer): a pair's two
                 * columns are the 64 bytes from the first one's (a row of zero points
                 * included: padrow holds 64 of them at least) */
                adj = pair && C == 32 && g->sw == 1;
                rt_qdw_zprep(&k, q, c0, nc, pair, r != NULL);
                mb = k.mask;
                for (kx = 0; kx < g->kw; kx++) {
                    __m512i v[4];
                    for (ky = 0; ky < 4; ky++) {
                        const int8_t *wr = w + (ky * g->kw + kx) * C + c0;
                        v[ky] = ky < g->kh ? rt_qdw_zload(wr, wr, mb, pair) : zero;
                    }
                    rt_qdw_z4(v[0], v[1], v[2], v[3], wq[kx]);
                    if (two) rt_qdw_z4(zero, v[0], v[1], v[2], wq2[kx]);
                }
                w00 = wq[0][0];
                w01 = wq[0][1];
                w02 = wq[0][2];
                w03 = wq[0][3];
                w10 = wq[1][0];
                w11 = wq[1][1];
                w12 = wq[1][2];
                w13 = wq[1][3];
                w20 = wq[2][0];
                w21 = wq[2][1];
                w22 = wq[2][2];
                w23 = wq[2][3];
                for (oy = oy0; oy < oy0 + RT_QDW_BAND && oy < g->oh; oy += 1 + rows2) {
                    rows2 = two && oy + 1 < oy0 + RT_QDW_BAND && oy + 1 < g->oh; /* RT_QDW_BAND is even */
                    for (ky = 0; ky < 4; ky++) { /* rows past kh read zero points: their weights are 0 */
                        int64_t iy = oy * g->sh - g->ph + ky * g->dh;
                        int in = (ky < g->kh || rows2) && iy >= 0 && iy < g->h;
                        rp[ky] = in ? x + (b * g->h + iy) * g->w * C + c0 : padrow + c0;
                        rs[ky] = in ? C : 0;
                    }
                    /* the pixel's outputs (and a pair's second, when there is one) */
#define RT_QDW_ZSTORE_AT(a0, a1, a2, a3, o)                                                    \
    rt_qdw_zstore(&k, a0, a1, a2, a3, r ? r + (o) : NULL, r && p + 1 < np ? r + (o) + C : r ? r + (o) : NULL, y + (o), \
                  p + 1 < np ? y + (o) + C : NULL)
#define RT_QDW_ZSTORE() RT_QDW_ZSTORE_AT(a0, a1, a2, a3, o)
                    for (x0 = 0; x0 < g->ow; x0 += pix) {
                        int64_t ix0 = x0 * g->sw - g->pw, span;
                        int64_t o = ((b * g->oh + oy) * g->ow + x0) * C + c0;
                        np = g->ow - x0 < pix ? g->ow - x0 : pix;
                        span = (np - 1) * g->sw + ekw;
                        for (j = 0; j < span; j++) {
                            /* a pair's upper half: the column of the next pixel (sw on) */
                            int64_t ix = ix0 + j, ix2 = ix + g->sw;
                            const uint8_t *pad = padrow + c0;
                            int in1 = ix >= 0 && ix < g->w, in2 = ix2 >= 0 && ix2 < g->w;
                            /* a 3-row kernel's fourth row has zero weights: a zero register, not
                             * a load (for a pair: two loads and an insert) */
                            __m512i v3 = g->kh > 3 || rows2 ? rt_qdw_zload(in1 ? rp[3] + ix * rs[3] : pad,
                                                                  in2 ? rp[3] + ix2 * rs[3] : pad, mb, pair)
                                                   : zero;
                            __m512i v0, v1, v2;
                            if (adj && in1 && in2) { /* the pair's two pixels side by side: one load a row */
                                v0 = _mm512_loadu_si512((const void *)(rp[0] + ix * rs[0]));
                                v1 = _mm512_loadu_si512((const void *)(rp[1] + ix * rs[1]));
                                v2 = _mm512_loadu_si512((const void *)(rp[2] + ix * rs[2]));
                            } else { /* written out: as a loop GCC at -O2 keeps the rows in memory */
                                v0 = rt_qdw_zload(in1 ? rp[0] + ix * rs[0] : pad, in2 ? rp[0] + ix2 * rs[0] : pad, mb, pair);
                                v1 = rt_qdw_zload(in1 ? rp[1] + ix * rs[1] : pad, in2 ? rp[1] + ix2 * rs[1] : pad, mb, pair);
                                v2 = rt_qdw_zload(in1 ? rp[2] + ix * rs[2] : pad, in2 ? rp[2] + ix2 * rs[2] : pad, mb, pair);
                            }
                            rt_qdw_z4(v0, v1, v2, v3, col[j]);
                        }
                        if (rows2) /* two output rows, oy and oy + 1 (its outputs ow*C on) */
                            for (p = 0; p < np; p += step, o += step * C) {
                                __m512i(*cp)[4] = col + p * g->sw;
                                __m512i a0 = _mm512_dpbusd_epi32(k.bias[0], cp[0][0], w00);
                                __m512i a1 = _mm512_dpbusd_epi32(k.bias[1], cp[0][1], w01);
                                __m512i a2 = _mm512_dpbusd_epi32(k.bias[2], cp[0][2], w02);
                                __m512i a3 = _mm512_dpbusd_epi32(k.bias[3], cp[0][3], w03);
                                __m512i b0 = _mm512_dpbusd_epi32(k.bias[0], cp[0][0], wq2[0][0]);
                                __m512i b1 = _mm512_dpbusd_epi32(k.bias[1], cp[0][1], wq2[0][1]);
                                __m512i b2 = _mm512_dpbusd_epi32(k.bias[2], cp[0][2], wq2[0][2]);
                                __m512i b3 = _mm512_dpbusd_epi32(k.bias[3], cp[0][3], wq2[0][3]);
                                a0 = _mm512_dpbusd_epi32(a0, cp[1][0], w10);
                                a1 = _mm512_dpbusd_epi32(a1, cp[1][1], w11);
                                a2 = _mm512_dpbusd_epi32(a2, cp[1][2], w12);
                                a3 = _mm512_dpbusd_epi32(a3, cp[1][3], w13);
                                b0 = _mm512_dpbusd_epi32(b0, cp[1][0], wq2[1][0]);
                                b1 = _mm512_dpbusd_epi32(b1, cp[1][1], wq2[1][1]);
                                b2 = _mm512_dpbusd_epi32(b2, cp[1][2], wq2[1][2]);
                                b3 = _mm512_dpbusd_epi32(b3, cp[1][3], wq2[1][3]);
                                a0 = _mm512_dpbusd_epi32(a0, cp[2][0], w20);
                                a1 = _mm512_dpbusd_epi32(a1, cp[2][1], w21);
                                a2 = _mm512_dpbusd_epi32(a2, cp[2][2], w22);
                                a3 = _mm512_dpbusd_epi32(a3, cp[2][3], w23);
                                b0 = _mm512_dpbusd_epi32(b0, cp[2][0], wq2[2][0]);
                                b1 = _mm512_dpbusd_epi32(b1, cp[2][1], wq2[2][1]);
                                b2 = _mm512_dpbusd_epi32(b2, cp[2][2], wq2[2][2]);
                                b3 = _mm512_dpbusd_epi32(b3, cp[2][3], wq2[2][3]);
                                RT_QDW_ZSTORE();
                                RT_QDW_ZSTORE_AT(b0, b1, b2, b3, o + g->ow * C);
                            }
                        else if (g->kw == 3 && g->dw == 1) /* 3x3: the weights in 12 registers */
                            for (p = 0; p < np; p += step, o += step * C) {
                                __m512i(*cp)[4] = col + p * g->sw; /* not const: C99 will not convert */
                                __m512i a0 = _mm512_dpbusd_epi32(k.bias[0], cp[0][0], w00);
                                __m512i a1 = _mm512_dpbusd_epi32(k.bias[1], cp[0][1], w01);
                                __m512i a2 = _mm512_dpbusd_epi32(k.bias[2], cp[0][2], w02);
                                __m512i a3 = _mm512_dpbusd_epi32(k.bias[3], cp[0][3], w03);
                                a0 = _mm512_dpbusd_epi32(a0, cp[1][0], w10);
                                a1 = _mm512_dpbusd_epi32(a1, cp[1][1], w11);
                                a2 = _mm512_dpbusd_epi32(a2, cp[1][2], w12);
                                a3 = _mm512_dpbusd_epi32(a3, cp[1][3], w13);
                                a0 = _mm512_dpbusd_epi32(a0, cp[2][0], w20);
                                a1 = _mm512_dpbusd_epi32(a1, cp[2][1], w21);
                                a2 = _mm512_dpbusd_epi32(a2, cp[2][2], w22);
                                a3 = _mm512_dpbusd_epi32(a3, cp[2][3], w23);
                                RT_QDW_ZSTORE();
                            }
                        else
                            for (p = 0; p < np; p += step, o += step * C) {
                                __m512i(*cp)[4] = col + p * g->sw;
                                __m512i a0 = k.bias[0], a1 = k.bias[1], a2 = k.bias[2], a3 = k.bias[3];
                                for (kx = 0; kx < g->kw; kx++) {
                                    const __m512i *cc = cp[kx * g->dw];
                                    a0 = _mm512_dpbusd_epi32(a0, cc[0], wq[kx][0]);
                                    a1 = _mm512_dpbusd_epi32(a1, cc[1], wq[kx][1]);
                                    a2 = _mm512_dpbusd_epi32(a2, cc[2], wq[kx][2]);
                                    a3 = _mm512_dpbusd_epi32(a3, cc[3], wq[kx][3]);
                                }
                                RT_QDW_ZSTORE();
                            }
                    }
                }
            }
#undef RT_QDW_ZSTORE
#undef RT_QDW_ZSTORE_AT
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
    memset(padrow, x_zp, (size_t)(C < 64 ? 64 : C)); /* 64 at least: rt_qdw_z's adjacent pairs */
#if defined(RT_QGEMM_AVX512) && defined(__AVX512VL__)
    if (rt_qdw_z(g, x, w, q, r, y, padrow)) return;
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
        v = v > lo ? v : lo; /* min(max(v, lo), hi), as rt_qrequant1 */
        y[i] = (uint8_t)(v < hi ? v : hi);
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

/* QMul with b repeated over the middle dim: y, a (outer, mid, inner), b (outer, inner)
 * (EfficientNet's squeeze-excitation scale (N,1,1,C) over NHWC (N,H,W,C)); rt_qmul's
 * formula element by element. One portable loop: GCC -O3 -march=native vectorizes it (an
 * AVX-512 form by hand, int32 products and even/odd int64 lanes, ran 1.06x slower in a lab
 * over EfficientNet-B0's five shapes: 0.284 against 0.268 ms). */
RT_API void rt_qmul_bcast(int64_t outer, int64_t mid, int64_t inner, const uint8_t *a,
                          int32_t a_zp, const uint8_t *b, int32_t b_zp, int32_t m, int shift,
                          int32_t y_zp, uint8_t *y) {
    int64_t o, p, i;
    for (o = 0; o < outer; o++, b += inner)
        for (p = 0; p < mid; p++, a += inner, y += inner)
            for (i = 0; i < inner; i++) {
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
