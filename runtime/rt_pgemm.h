/* rt_pgemm.h: the fp32 GEMM microkernel under channels-last convolutions (1x1 as a plain
 * GEMM, KxK as an indirect GEMM): register-blocked tiles of output pixels x output channels
 * over weights that the compiler packed once (backend/plan.c, plan_pack_weights).
 *
 * Packed weights: per group g and panel p of RT_PGEMM_NR = 16 output channels (n0 = p*16),
 * the reduction runs over k = tap*cg + c (tap = kh*KW + kw, c < cg = C/group), one row of
 * 16 floats per k:
 *     wp[((g*NP + p)*taps*cg + k)*16 + j] = w[kh][kw][c][g*mg + n0 + j]   (0 past mg)
 * so the reduction of one panel is one contiguous stream. 16 columns serve every path: one
 * zmm (AVX-512 takes two panels per tile), two ymm (AVX2), four NEON q registers; a bundle
 * built for another ISA reads the same blob.
 *
 * Activations arrive as a table of row pointers per tap and tile row (indirect convolution,
 * as XNNPACK's: no im2col buffer): row r of tap t reads x at its input pixel, or the static
 * zero row where the tap falls in the padding.
 *
 * Paths, chosen by the compiler's macros when the bundle is built (never at run time):
 * AVX-512F (14 rows x 32 columns: 28 zmm accumulators, 2 weight loads and 14 broadcasts per
 * 28 FMAs), AVX2+FMA (6 x 16: 12 ymm accumulators, 2 weight loads and 6 broadcasts per 12
 * FMAs), AArch64 NEON (6 x 16: 24 q accumulators of 32 registers), portable C (4 x 16,
 * plain loops that compilers vectorize). RT_PGEMM_PORTABLE forces the portable path.
 * Floor: P pixels x M channels x K = taps*cg reduction is P*M*K FMAs; one core of 2 FMA
 * pipes does 2 x lanes FMAs a cycle (AVX2: 16, AVX-512: 32). Measured on a Zen 3 core
 * (bench/kernels/pgemm.c, docs/cpu-bench.md): the AVX2 tile alone, operands in L1, runs at
 * the FMA loop's rate (~97 GFLOP/s); whole convolutions with warm caches at 85-91% of it
 * (ResNet-50's and BERT's shapes of K >= 128), less where K is short (64: ~75%), where the
 * image is 7x7 (49 pixels: 8 full tiles and, on AVX2, a one-row one) and where the weights
 * come cold from memory, as in a model. C99. */
#ifndef KILN_RT_PGEMM_H
#define KILN_RT_PGEMM_H

#include "rt_act.h"
#include "rt_common.h"
#include "rt_conv.h"
#include "rt_par.h"

/* The AVX-512 path's tile rows and pixel block, named here for every build: the compiler
 * (built without AVX-512) sizes a bundle's scratch for that path (rt_pgemm_apk_bytes) */
#define RT_PGEMM_AVX512_MR 14 /* 14 x 2 zmm accumulators + 2 weight vectors + 1 broadcast = 31 */
#define RT_PGEMM_AVX512_MC_TILES 16
#if defined(__AVX512F__) && !defined(RT_PGEMM_PORTABLE) && !defined(__CUDACC__)
#define RT_PGEMM_ISA "avx512"
#define RT_PGEMM_AVX512 1
#define RT_PGEMM_MR RT_PGEMM_AVX512_MR
#define RT_PGEMM_NP 2 /* panels per tile */
#define RT_PGEMM_MC_TILES RT_PGEMM_AVX512_MC_TILES
#define RT_PGEMM_SHORT 1 /* tiles of fewer rows at their own cost (rt_pgemm_tile_pf_f32) */
#define RT_PGEMM_PART 1  /* tiles of fewer columns too: one panel, masked stores */
/* 768 reduction values a block: BERT's and ViT's 768-wide products run in one block, so
 * that each tile fills and drains its 28 accumulators once (not 3 times, reading back its
 * partial sums), and a GELU product's activation runs on rows still in L1. The pair of
 * panels' block (96 KiB) comes from L2: at 256 values (32 KiB, the whole L1 beside the
 * tile's rows) it already did. Lab, Zen 4: BERT-base's products 0.95x the time of 256's
 * (weights flushed: 0.93x), ViT-B/16's 0.95x, ResNet-50's 1x1 0.98x and 3x3 0.93x. Never
 * a multiple of 1024: abuf's rows, KC floats apart, would then share one L1 set as the rows
 * copied into it did (1024: BERT's 3072x768, whose rows are copied, ran 1.65x the time
 * of 768's, its other products 0.98-1.00x, lab) */
#define RT_PGEMM_KC 768
#define RT_PGEMM_AVX512_ONLY_ 1 /* rows copied to scratch (apk below): this path's alone */
/* tiles of 17-24 columns: the second panel at 256 bits (rt_pgemm_tile_avx512's HALF). Not
 * with clang: its code for them ran MobileNetV2's 96->24 1.2-1.34x the time of the full panel
 * (gcc's: 0.86x), lab, Zen 4 */
#if defined(__clang__)
#define RT_PGEMM_HALF 0
#else
#define RT_PGEMM_HALF 1
#endif
#include <immintrin.h>
#elif defined(__AVX2__) && defined(__FMA__) && !defined(RT_PGEMM_PORTABLE) &&              \
    !defined(__CUDACC__)
#define RT_PGEMM_ISA "avx2"
#define RT_PGEMM_AVX2 1
#define RT_PGEMM_MR 6 /* 6 x 2 ymm accumulators + 2 weight vectors + 1 broadcast = 15 of 16 */
#define RT_PGEMM_NP 1
#define RT_PGEMM_MC_TILES 40
#include <immintrin.h>
#elif defined(__aarch64__) && defined(__ARM_NEON) && !defined(RT_PGEMM_PORTABLE)
#define RT_PGEMM_ISA "neon"
#define RT_PGEMM_NEON 1
#define RT_PGEMM_MR 6 /* 6 x 4 q accumulators + 4 weight vectors = 28 of 32 */
#define RT_PGEMM_NP 1
#define RT_PGEMM_MC_TILES 16
#include <arm_neon.h>
#else
#define RT_PGEMM_ISA "portable"
#define RT_PGEMM_MR 4 /* 4 x 16 accumulators: 16 SSE registers when vectorized */
#define RT_PGEMM_NP 1
#define RT_PGEMM_MC_TILES 16 /* small stacks (microcontrollers): 2 x 64 pixel offsets */
#endif

#ifndef RT_PGEMM_SHORT
#define RT_PGEMM_SHORT 0
#endif
#ifndef RT_PGEMM_PART
#define RT_PGEMM_PART 0
#endif
#ifndef RT_PGEMM_AVX512_ONLY_
#define RT_PGEMM_AVX512_ONLY_ 0
#endif
#define RT_PGEMM_NR 16                          /* output channels per packed panel */
#define RT_PGEMM_NT (RT_PGEMM_NR * RT_PGEMM_NP) /* output channels per tile */
#define RT_PGEMM_MAX_TAPS 64  /* kernel taps (KH*KW) of one indirection table on the stack */
#ifndef RT_PGEMM_KC
#define RT_PGEMM_KC 256 /* reduction values per block: a panel's block of weights is 16 KiB */
#endif
/* Pixels per block at most: their input rows (MC x KC floats) stay in L2. AVX2: 240 x 256
 * floats, 240 KiB of a Zen 3 or Skylake core's 512 KiB-1 MiB, so that a weight panel's block
 * comes into L1 once per 40 tiles; 16 tiles elsewhere. Blocks are balanced (rt_pgemm_mc):
 * 196 pixels make one block, not 96 + 96 + 4 (whose last tile would stream every weight
 * again for 4 pixels). */
#define RT_PGEMM_MC (RT_PGEMM_MR * RT_PGEMM_MC_TILES)
#define RT_PGEMM_GATHER 16 /* fewer channels than this a tap: the tile's rows are gathered */

/* Pixels per block for P pixels: the fewest blocks of at most mr x mc_tiles (RT_PGEMM_MC),
 * of equal size rounded up to whole tiles of mr rows (the last block takes what remains). */
RT_API int64_t rt_pgemm_mc_for(int64_t P, int64_t mr, int64_t mc_tiles) {
    const int64_t n_b = (P + mr * mc_tiles - 1) / (mr * mc_tiles);
    const int64_t per = n_b > 0 ? (P + n_b - 1) / n_b : 1;
    return (per + mr - 1) / mr * mr;
}
/* That of this build's path. */
RT_API int64_t rt_pgemm_mc(int64_t P) {
    return rt_pgemm_mc_for(P, RT_PGEMM_MR, RT_PGEMM_MC_TILES);
}

/* The greatest common divisor of a and b (> 0): the channels a tap of a two-operand 1x1 */
RT_API int64_t rt_pgemm_gcd(int64_t a, int64_t b) {
    while (b != 0) {
        const int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Prefetch of one 64-byte line of weights into L1, of output and residual rows into L2, or
 * of a tile's own rows into L1 with write intent (a hint: never faults; none where the
 * compiler has no builtin for it). */
#if defined(__GNUC__) || defined(__clang__)
#define RT_PGEMM_PREFETCH(p) __builtin_prefetch((p), 0, 3)
#define RT_PGEMM_PREFETCH_L2(p) __builtin_prefetch((p), 0, 2) /* prefetcht1: L2, not L1 */
#define RT_PGEMM_PREFETCH_W(p) __builtin_prefetch((p), 1, 3) /* prefetchw: L1, to be written */
#else
#define RT_PGEMM_PREFETCH(p) ((void)(p))
#define RT_PGEMM_PREFETCH_L2(p) ((void)(p))
#define RT_PGEMM_PREFETCH_W(p) ((void)(p))
#endif
/* Tiles ahead whose output rows (and residual rows) a tile prefetches, into L2 (the driver,
 * rt_pconv_nhwc_block_f32, says why). ResNet-50 in-model (bench/cpu/profile.py, three
 * alternating rounds, Zen 4): the 16 1x1 layers with a residual 0.93x the time of one tile
 * ahead into L1, 0.93x at one tile ahead into L2, 0.96x at three ahead. */
#define RT_PGEMM_YPF_TILES 2
/* ... only where the tile has a residual or a reduction of this many steps or more: the 28
 * prefetches of a short one (MobileNetV2's 16-32 channel expansions: 16 steps) went out in a
 * burst beside its own stores, for rows that the hardware prefetcher already brought (lab,
 * Zen 4: 16->96 @112 0.93x, 24->144 @56 0.95x, 32->16 0.95x the time without them; the
 * AVX-512 path alone, the one measured) */
#if defined(RT_PGEMM_AVX512)
#define RT_PGEMM_YPF_K 64
#else
#define RT_PGEMM_YPF_K 0
#endif

/* The row that padded taps read: a block reads at most RT_PGEMM_KC channels of a tap. */
static const float rt_pgemm_zero[RT_PGEMM_KC] = {0.0f};

#if defined(RT_PGEMM_AVX512)
/* c[0..16) = min(max(v + res[0..16), lo), hi) (res NULL: no residual) */
RT_API void rt_pgemm_st16(float *c, __m512 v, const float *res, __m512 lo, __m512 hi) {
    if (res) v = _mm512_add_ps(v, _mm512_loadu_ps(res));
    _mm512_storeu_ps(c, _mm512_min_ps(hi, _mm512_max_ps(lo, v))); /* NaN passes */
}

/* rt_pgemm_st16 on the lanes of m alone (the others neither read nor written) */
RT_API void rt_pgemm_st16m(float *c, __mmask16 m, __m512 v, const float *res, __m512 lo,
                           __m512 hi) {
    if (res) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, res));
    _mm512_mask_storeu_ps(c, m, _mm512_min_ps(hi, _mm512_max_ps(lo, v)));
}

/* The GELU epilogue of a tile: c[r][j] = gelu(s[r][j] + res[r][j]) (res NULL: none) for r <
 * rows, j < cols, s the tile's sums (rows of RT_PGEMM_NT floats, stored from its registers a
 * moment before). rt_vgelu16_f32 on 16 values at a time, in place of rt_act_rows_f32 on the
 * stored rows: its erf loop ran at 8 lanes, both of its branches evaluated, and the rows it
 * read back, ldc apart (3072 floats: BERT's and ViT's 768x3072 products, one L1 set), had
 * evicted each other. Not inlined: one copy for every tile shape. */
RT_API void rt_pgemm_gelu_st(const float *s, int rows, int64_t cols, float *c, int64_t ldc,
                             const float *res) {
    int r;
    int64_t j;
    for (r = 0; r < rows; r++, s += RT_PGEMM_NT, c += ldc, res = res ? res + ldc : res)
        for (j = 0; j < cols; j += 16) {
            const __mmask16 m =
                (__mmask16)(cols - j >= 16 ? 0xFFFF : (1u << (cols - j)) - 1u);
            __m512 v = _mm512_loadu_ps(s + j);
            if (res) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, res + j));
            _mm512_mask_storeu_ps(c + j, m, rt_vgelu16_f32(v));
        }
}
#elif defined(RT_PGEMM_AVX2)
/* c[0..8) = min(max(v + res[0..8), lo), hi) (res NULL: no residual) */
RT_API void rt_pgemm_st8(float *c, __m256 v, const float *res, __m256 lo, __m256 hi) {
    if (res) v = _mm256_add_ps(v, _mm256_loadu_ps(res));
    _mm256_storeu_ps(c, _mm256_min_ps(hi, _mm256_max_ps(lo, v))); /* NaN passes */
}
#endif

#if defined(RT_PGEMM_AVX512)
#if defined(__GNUC__) || defined(__clang__)
#define RT_PGEMM_INLINE static inline __attribute__((always_inline))
#else
#define RT_PGEMM_INLINE static inline
#endif
/* The AVX-512 tile of R rows (R <= RT_PGEMM_MR) and NPN panels (1 or 2), as rt_pgemm_tile_f32
 * below states it, storing (and with accum reading) its first RS <= R rows' first cols
 * columns alone (cols <= 16 * NPN; the rest of c and res untouched: rows past RS are
 * computed from their valid row pointers and dropped); with HALF (NPN 2, cols <= 24) the
 * second panel's FMAs are 256 bits wide (Zen 4 runs a zmm FMA as two: 24 columns cost 21
 * cycles a step instead of 28). Called with R, NPN and HALF constants, so that the compiler
 * keeps the NPN*R accumulators in registers. Each row's sum runs in the
 * same order for every R and NPN (one FMA a reduction step), so a row gives the same bits in
 * a full tile and in a short or narrow one. Every (taps*kc/pf_n)-th of its reduction steps,
 * from the first, also prefetches the next line of pf (and of pf + pf_panel where pf_panel is
 * not 0), pf_n lines in all: the driver's share of the next tile column's weights, spread
 * over the whole tile (a burst of them before the tile filled the L1's miss buffers while the
 * tile's own reads waited; one a step over its first pf_n steps made those steps ~1.7x as
 * long as the others, perf samples of BERT's 768x2304, Zen 4). */
RT_PGEMM_INLINE void rt_pgemm_tile_avx512(const int R, const int RS, const int NPN,
                                          const int HALF, const int GELU, const int DLD,
                                          int64_t taps, int64_t kc, const float *const *a,
                                          const float *b, int64_t b_tap, int64_t b_panel,
                                          const float *init, int accum, float *c, int64_t ldc,
                                          int64_t cols, const float *res, float lo, float hi,
                                          const float *pf, int64_t pf_n, int64_t pf_panel) {
    /* the accumulators are named, not an array: GCC kept an array's in registers inside
     * the reduction loop alone, storing the start values to the stack and loading them
     * (and the sums back for the epilogue): 4 x 28 zmm moves a tile, a tenth of a tile of
     * 16 reduction steps */
#define RT_PGEMM_RS_(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13)
#define RT_PGEMM_DECL_(r) __m512 c0_##r = _mm512_setzero_ps(), c1_##r = c0_##r;
    RT_PGEMM_RS_(RT_PGEMM_DECL_)
#undef RT_PGEMM_DECL_
    int64_t t, k;
    const __m512 i0 = _mm512_loadu_ps(init), i1 = _mm512_loadu_ps(init + 16);
    /* the lanes stored of the last panel (all where cols fills it) */
    const int whole = cols == 16 * NPN;
    const __mmask16 mlast = (__mmask16)(cols - 16 * (NPN - 1) >= 16
                                            ? 0xFFFF
                                            : (1u << (cols - 16 * (NPN - 1))) - 1u);
    const __mmask16 m0 = NPN == 1 ? mlast : (__mmask16)0xFFFF, m1 = NPN == 1 ? 0 : mlast;
#define RT_PGEMM_INIT_(r)                                                                     \
    if (r < R) {                                                                              \
        c0_##r = accum ? _mm512_maskz_loadu_ps(m0, c + (r < RS ? r : 0) * ldc) : i0;          \
        if (NPN > 1)                                                                          \
            c1_##r = accum ? _mm512_maskz_loadu_ps(m1, c + (r < RS ? r : 0) * ldc + 16) : i1; \
    }
    RT_PGEMM_RS_(RT_PGEMM_INIT_)
#undef RT_PGEMM_INIT_
    /* one line (a panel) every pf_sp steps, from the first; pf_n <= taps * kc */
    const int64_t pf_sp = pf_n > 0 ? taps * kc / pf_n : 0;
    int64_t pf_cd = pf_n > 0 ? 1 : INT64_MAX;
    /* the tile's own rows into L1 before its stores: from step ys of the last tap, one row
     * a step (its first and last line, with write intent; and its residual's), so that the
     * epilogue's 28 stores and 28 residual loads find their lines in L1, not in L2 where
     * the driver's prefetch (RT_PGEMM_YPF_TILES) left them (the likely cost: a tile's
     * stores waiting on their lines hold the next tile's start; this host has no counters
     * to show it, and the kernel lab, whose outputs stay in L3 between calls, did not
     * reproduce the gain). R steps before the end: ~400 cycles at 64
     * reduction steps, time for lines from L2 or L3, too short for the 8-way L1 sets to
     * evict them again (rows 1-8 KiB apart share 1-4 groups of sets). Not where the rows are
     * a buffer of the tile's own width (ldc <= RT_PGEMM_NT: Winograd's products, the
     * driver's tile): written a moment before, in L1 already (Winograd's 256@14x14 layers
     * ran 1.03x the time with it). ResNet-50 in-model, Zen 4 (bench/cpu/resnet50-profile.md):
     * the 1x1 families 0.95-0.97x the time */
    const int64_t ys = ldc > RT_PGEMM_NT && kc >= R ? kc - R : INT64_MAX;
    for (t = 0; t < taps; t++) {
        const float *const *at = a + t * RT_PGEMM_MR;
        const float *ad = at[0]; /* DLD: row r at ad + r * DLD */
        const float *b0 = b + t * b_tap, *b1 = b0 + b_panel;
        const int64_t ys_t = t == taps - 1 ? ys : INT64_MAX; /* the last tap's steps */
#define RT_PGEMM_FMA_(r)                                                                      \
    if (r < R) {                                                                              \
        const __m512 v = _mm512_set1_ps(DLD ? ad[r * DLD + k] : at[r][k]);                    \
        c0_##r = _mm512_fmadd_ps(v, w0, c0_##r);                                              \
        if (NPN > 1 && HALF)                                                                  \
            c1_##r = _mm512_castps256_ps512(_mm256_fmadd_ps(                                  \
                _mm512_castps512_ps256(v), _mm512_castps512_ps256(w1),                        \
                _mm512_castps512_ps256(c1_##r)));                                             \
        else if (NPN > 1)                                                                     \
            c1_##r = _mm512_fmadd_ps(v, w1, c1_##r);                                          \
    }
        for (k = 0; k < (DLD ? DLD : kc); k++) {
            const __m512 w0 = _mm512_loadu_ps(b0 + k * RT_PGEMM_NR);
            const __m512 w1 = NPN > 1 && HALF
                                  ? _mm512_castps256_ps512(_mm256_loadu_ps(b1 + k * RT_PGEMM_NR))
                              : NPN > 1 ? _mm512_loadu_ps(b1 + k * RT_PGEMM_NR)
                                        : w0;
            if (--pf_cd == 0) { /* one branch, not a loop of its own: the sums stay in registers */
                RT_PGEMM_PREFETCH(pf);
                if (pf_panel) RT_PGEMM_PREFETCH(pf + pf_panel);
                pf += RT_PGEMM_NR;
                pf_cd = --pf_n > 0 ? pf_sp : INT64_MAX;
            }
            if (k >= ys_t) { /* rows [0, R) over the last R steps */
                const int64_t yr = k - ys_t;
                RT_PGEMM_PREFETCH_W(c + yr * ldc);
                RT_PGEMM_PREFETCH_W(c + yr * ldc + cols - 1);
                if (res) {
                    RT_PGEMM_PREFETCH(res + yr * ldc);
                    RT_PGEMM_PREFETCH(res + yr * ldc + cols - 1);
                }
            }
            RT_PGEMM_RS_(RT_PGEMM_FMA_)
        }
#undef RT_PGEMM_FMA_
    }
    if (GELU) { /* the sums into a buffer of the tile's own (L1), GELU from there */
        float s[RT_PGEMM_MR * RT_PGEMM_NT];
#define RT_PGEMM_SG_(r)                                                                       \
    if (r < R) {                                                                              \
        _mm512_storeu_ps(s + r * RT_PGEMM_NT, c0_##r);                                        \
        if (NPN > 1) _mm512_storeu_ps(s + r * RT_PGEMM_NT + 16, c1_##r);                      \
    }
        RT_PGEMM_RS_(RT_PGEMM_SG_)
#undef RT_PGEMM_SG_
        rt_pgemm_gelu_st(s, RS, cols, c, ldc, res);
    } else {
        const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
#define RT_PGEMM_ST_(r)                                                                       \
    if (r < R && r < RS) {                                                                    \
        const float *rr = res ? res + r * ldc : res;                                          \
        if (NPN == 1) {                                                                       \
            rt_pgemm_st16m(c + r * ldc, mlast, c0_##r, rr, vlo, vhi);                         \
        } else if (whole) {                                                                   \
            rt_pgemm_st16(c + r * ldc, c0_##r, rr, vlo, vhi);                                 \
            rt_pgemm_st16(c + r * ldc + 16, c1_##r, rr ? rr + 16 : rr, vlo, vhi);             \
        } else {                                                                              \
            rt_pgemm_st16(c + r * ldc, c0_##r, rr, vlo, vhi);                                 \
            rt_pgemm_st16m(c + r * ldc + 16, mlast, c1_##r, rr ? rr + 16 : rr, vlo, vhi);     \
        }                                                                                     \
    }
        RT_PGEMM_RS_(RT_PGEMM_ST_)
#undef RT_PGEMM_ST_
    }
#undef RT_PGEMM_RS_
    (void)b_panel, (void)i1, (void)m1;
}
#endif

/* One tile: c[r][j] = min(max(init[j] + sum over taps t, k < kc of a[t*MR + r][k] *
 * b[t*b_tap + k*16 + j] + res[r][j], lo), hi) (j < 16), and the same for the second panel
 * at b + b_panel (AVX-512). a: taps x RT_PGEMM_MR row pointers (rows past the tile's point
 * at a valid row); init: RT_PGEMM_NT floats, or with accum the tile's own c[r][j] (a later
 * block of the reduction); c, res (NULL: none): RT_PGEMM_MR rows of RT_PGEMM_NT floats, ldc
 * apart. The clamp is ReLU's and Clip's epilogue (lo -inf and hi
 * +inf: none). */
RT_API void rt_pgemm_tile_f32(int64_t taps, int64_t kc, const float *const *a, const float *b,
                              int64_t b_tap, int64_t b_panel, const float *init, int accum,
                              float *c, int64_t ldc, const float *res, float lo, float hi) {
    int64_t t, k;
#if defined(RT_PGEMM_AVX512)
    rt_pgemm_tile_avx512(RT_PGEMM_MR, RT_PGEMM_MR, 2, 0, 0, 0, taps, kc, a, b, b_tap, b_panel,
                         init, accum, c, ldc, RT_PGEMM_NT, res, lo, hi, (const float *)0, 0, 0);
    (void)t, (void)k;
#elif defined(RT_PGEMM_AVX2)
    /* the 12 accumulators are named so that no compiler spills them through an array */
    const float *s0 = accum ? c : init, *s1 = accum ? c + ldc : init;
    const float *s2 = accum ? c + 2 * ldc : init, *s3 = accum ? c + 3 * ldc : init;
    const float *s4 = accum ? c + 4 * ldc : init, *s5 = accum ? c + 5 * ldc : init;
    __m256 c00 = _mm256_loadu_ps(s0), c01 = _mm256_loadu_ps(s0 + 8);
    __m256 c10 = _mm256_loadu_ps(s1), c11 = _mm256_loadu_ps(s1 + 8);
    __m256 c20 = _mm256_loadu_ps(s2), c21 = _mm256_loadu_ps(s2 + 8);
    __m256 c30 = _mm256_loadu_ps(s3), c31 = _mm256_loadu_ps(s3 + 8);
    __m256 c40 = _mm256_loadu_ps(s4), c41 = _mm256_loadu_ps(s4 + 8);
    __m256 c50 = _mm256_loadu_ps(s5), c51 = _mm256_loadu_ps(s5 + 8);
    for (t = 0; t < taps; t++) {
        const float *const *at = a + t * RT_PGEMM_MR;
        const float *a0 = at[0], *a1 = at[1], *a2 = at[2], *a3 = at[3], *a4 = at[4];
        const float *a5 = at[5], *bt = b + t * b_tap;
#pragma GCC unroll 2 /* half the loop's counter and compare a step (gcc, clang) */
        for (k = 0; k < kc; k++) {
            const __m256 w0 = _mm256_loadu_ps(bt + k * RT_PGEMM_NR);
            const __m256 w1 = _mm256_loadu_ps(bt + k * RT_PGEMM_NR + 8);
            __m256 v = _mm256_broadcast_ss(a0 + k);
            c00 = _mm256_fmadd_ps(v, w0, c00);
            c01 = _mm256_fmadd_ps(v, w1, c01);
            v = _mm256_broadcast_ss(a1 + k);
            c10 = _mm256_fmadd_ps(v, w0, c10);
            c11 = _mm256_fmadd_ps(v, w1, c11);
            v = _mm256_broadcast_ss(a2 + k);
            c20 = _mm256_fmadd_ps(v, w0, c20);
            c21 = _mm256_fmadd_ps(v, w1, c21);
            v = _mm256_broadcast_ss(a3 + k);
            c30 = _mm256_fmadd_ps(v, w0, c30);
            c31 = _mm256_fmadd_ps(v, w1, c31);
            v = _mm256_broadcast_ss(a4 + k);
            c40 = _mm256_fmadd_ps(v, w0, c40);
            c41 = _mm256_fmadd_ps(v, w1, c41);
            v = _mm256_broadcast_ss(a5 + k);
            c50 = _mm256_fmadd_ps(v, w0, c50);
            c51 = _mm256_fmadd_ps(v, w1, c51);
        }
    }
    {
        const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
        const float *r0 = res, *r1 = res ? res + ldc : res, *r2 = res ? res + 2 * ldc : res;
        const float *r3 = res ? res + 3 * ldc : res, *r4 = res ? res + 4 * ldc : res;
        const float *r5 = res ? res + 5 * ldc : res;
        rt_pgemm_st8(c, c00, r0, vlo, vhi);
        rt_pgemm_st8(c + 8, c01, r0 ? r0 + 8 : r0, vlo, vhi);
        rt_pgemm_st8(c + ldc, c10, r1, vlo, vhi);
        rt_pgemm_st8(c + ldc + 8, c11, r1 ? r1 + 8 : r1, vlo, vhi);
        rt_pgemm_st8(c + 2 * ldc, c20, r2, vlo, vhi);
        rt_pgemm_st8(c + 2 * ldc + 8, c21, r2 ? r2 + 8 : r2, vlo, vhi);
        rt_pgemm_st8(c + 3 * ldc, c30, r3, vlo, vhi);
        rt_pgemm_st8(c + 3 * ldc + 8, c31, r3 ? r3 + 8 : r3, vlo, vhi);
        rt_pgemm_st8(c + 4 * ldc, c40, r4, vlo, vhi);
        rt_pgemm_st8(c + 4 * ldc + 8, c41, r4 ? r4 + 8 : r4, vlo, vhi);
        rt_pgemm_st8(c + 5 * ldc, c50, r5, vlo, vhi);
        rt_pgemm_st8(c + 5 * ldc + 8, c51, r5 ? r5 + 8 : r5, vlo, vhi);
    }
    (void)b_panel;
#elif defined(RT_PGEMM_NEON)
    float32x4_t acc[RT_PGEMM_MR][4];
    int r, q;
    for (r = 0; r < RT_PGEMM_MR; r++)
        for (q = 0; q < 4; q++) acc[r][q] = vld1q_f32((accum ? c + r * ldc : init) + 4 * q);
    for (t = 0; t < taps; t++) {
        const float *const *at = a + t * RT_PGEMM_MR;
        const float *bt = b + t * b_tap;
        for (k = 0; k < kc; k++) {
            const float32x4_t w0 = vld1q_f32(bt + k * RT_PGEMM_NR);
            const float32x4_t w1 = vld1q_f32(bt + k * RT_PGEMM_NR + 4);
            const float32x4_t w2 = vld1q_f32(bt + k * RT_PGEMM_NR + 8);
            const float32x4_t w3 = vld1q_f32(bt + k * RT_PGEMM_NR + 12);
            for (r = 0; r < RT_PGEMM_MR; r++) {
                const float v = at[r][k];
                acc[r][0] = vfmaq_n_f32(acc[r][0], w0, v);
                acc[r][1] = vfmaq_n_f32(acc[r][1], w1, v);
                acc[r][2] = vfmaq_n_f32(acc[r][2], w2, v);
                acc[r][3] = vfmaq_n_f32(acc[r][3], w3, v);
            }
        }
    }
    {
        const float32x4_t vlo = vdupq_n_f32(lo), vhi = vdupq_n_f32(hi);
        for (r = 0; r < RT_PGEMM_MR; r++)
            for (q = 0; q < 4; q++) {
                float32x4_t v = acc[r][q];
                if (res) v = vaddq_f32(v, vld1q_f32(res + r * ldc + 4 * q));
                vst1q_f32(c + r * ldc + 4 * q, vminq_f32(vmaxq_f32(v, vlo), vhi));
            }
    }
    (void)b_panel;
#else
    float acc[RT_PGEMM_MR][RT_PGEMM_NR];
    int r, j;
    for (r = 0; r < RT_PGEMM_MR; r++)
        for (j = 0; j < RT_PGEMM_NR; j++) acc[r][j] = accum ? c[r * ldc + j] : init[j];
    for (t = 0; t < taps; t++) {
        const float *const *at = a + t * RT_PGEMM_MR;
        const float *bt = b + t * b_tap;
        for (k = 0; k < kc; k++) {
            const float *restrict w = bt + k * RT_PGEMM_NR;
            for (r = 0; r < RT_PGEMM_MR; r++) {
                const float v = at[r][k];
                for (j = 0; j < RT_PGEMM_NR; j++) acc[r][j] += v * w[j];
            }
        }
    }
    for (r = 0; r < RT_PGEMM_MR; r++)
        for (j = 0; j < RT_PGEMM_NR; j++) {
            float v = acc[r][j] + (res ? res[r * ldc + j] : 0.0f);
            v = v < lo ? lo : v;
            c[r * ldc + j] = v > hi ? hi : v;
        }
    (void)b_panel;
#endif
}

#if defined(RT_PGEMM_AVX2)
/* A tile of one row (a lone last pixel: the 7x7 images of ResNet-50's last stage leave one
 * of 49, a classifier has only one): c[j] = (accum ? c[j] : init[j]) + sum over taps t,
 * k < kc of a[t*RT_PGEMM_MR][k] * b[t*b_tap + k*16 + j] (j < 16). The full tile would spend
 * 6 rows' FMAs on it, and one row's 2 chains of FMAs would wait on their latency: the
 * reduction runs in 4 interleaved partial sums instead (8 independent chains), added at the
 * end, so such a pixel's sum is rounded in another order than a full tile's (the same pixels
 * take this path for any worker count: pixel blocks do not depend on it). */
RT_API void rt_pgemm_row_f32(int64_t taps, int64_t kc, const float *const *a, const float *b,
                             int64_t b_tap, const float *init, int accum, float *c) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    __m256 u0 = s0, u1 = s0, u2 = s0, u3 = s0;
    const float *s = accum ? c : init;
    int64_t t, k;
    for (t = 0; t < taps; t++) {
        const float *x = a[t * RT_PGEMM_MR], *w = b + t * b_tap;
        for (k = 0; k + 4 <= kc; k += 4, x += 4, w += 4 * RT_PGEMM_NR) {
            __m256 v = _mm256_broadcast_ss(x);
            s0 = _mm256_fmadd_ps(v, _mm256_loadu_ps(w), s0);
            u0 = _mm256_fmadd_ps(v, _mm256_loadu_ps(w + 8), u0);
            v = _mm256_broadcast_ss(x + 1);
            s1 = _mm256_fmadd_ps(v, _mm256_loadu_ps(w + 16), s1);
            u1 = _mm256_fmadd_ps(v, _mm256_loadu_ps(w + 24), u1);
            v = _mm256_broadcast_ss(x + 2);
            s2 = _mm256_fmadd_ps(v, _mm256_loadu_ps(w + 32), s2);
            u2 = _mm256_fmadd_ps(v, _mm256_loadu_ps(w + 40), u2);
            v = _mm256_broadcast_ss(x + 3);
            s3 = _mm256_fmadd_ps(v, _mm256_loadu_ps(w + 48), s3);
            u3 = _mm256_fmadd_ps(v, _mm256_loadu_ps(w + 56), u3);
        }
        for (; k < kc; k++, x++, w += RT_PGEMM_NR) {
            const __m256 v = _mm256_broadcast_ss(x);
            s0 = _mm256_fmadd_ps(v, _mm256_loadu_ps(w), s0);
            u0 = _mm256_fmadd_ps(v, _mm256_loadu_ps(w + 8), u0);
        }
    }
    s0 = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
    u0 = _mm256_add_ps(_mm256_add_ps(u0, u1), _mm256_add_ps(u2, u3));
    _mm256_storeu_ps(c, _mm256_add_ps(_mm256_loadu_ps(s), s0));
    _mm256_storeu_ps(c + 8, _mm256_add_ps(_mm256_loadu_ps(s + 8), u0));
}
#endif

#if defined(RT_PGEMM_AVX512)
/* The cases of rt_pgemm_rows6_f32's dispatch by its rows (1 .. RT_PGEMM_MR, AVX-512's 14),
 * each through the RT_PGEMM_ROWS_(R) that it defines. */
#define RT_PGEMM_ROW_CASES_                                                                   \
    RT_PGEMM_ROWS_(1);                                                                        \
    RT_PGEMM_ROWS_(2);                                                                        \
    RT_PGEMM_ROWS_(3);                                                                        \
    RT_PGEMM_ROWS_(4);                                                                        \
    RT_PGEMM_ROWS_(5);                                                                        \
    RT_PGEMM_ROWS_(6);                                                                        \
    RT_PGEMM_ROWS_(7);                                                                        \
    RT_PGEMM_ROWS_(8);                                                                        \
    RT_PGEMM_ROWS_(9);                                                                        \
    RT_PGEMM_ROWS_(10);                                                                       \
    RT_PGEMM_ROWS_(11);                                                                       \
    RT_PGEMM_ROWS_(12);                                                                       \
    RT_PGEMM_ROWS_(13);                                                                       \
    RT_PGEMM_ROWS_(RT_PGEMM_MR);

/* The driver's tile: rows <= RT_PGEMM_MR rows of rt_pgemm_tile_f32 (the same arguments), of
 * its first cols <= RT_PGEMM_NT columns, with rt_pgemm_tile_avx512's prefetch (pf, pf_n,
 * pf_panel). A short tile costs about its rows alone: BERT's 128 rows leave 2 past 9 full
 * tiles, ViT's 197 leave 1, a 7x7 image's 49 leave 7, and a full tile spent 14 rows' FMAs
 * on them. A full tile runs its own code; a short one runs as tiles of at most 7 rows (its
 * first 7, then the rest), each on the code of 2, 4 or 7 rows that holds it, which computes
 * them and the rows after them (from their valid row pointers: the tile's contract) and
 * stores its own. Each row's sum runs in the same order for every tile shape, so the bits
 * are those of a tile of its own rows. One piece of code for each of 14 row counts (x 5
 * column shapes), inlined, was 174 KB of a bundle and most of its compile at -O3
 * -march=native (a 12-node bundle: 16.1 s, 6.2 s this way); now a short tile spends at most
 * 2 rows' FMAs more (rows of 1 and 2 cost the same: their few chains of FMAs wait on their
 * latency, 4 cycles on Zen 4) and reads its weights twice past 7 rows (the tile alone, Zen 4:
 * 13 rows 1.03x the time of their own code, 7 rows 0.79x, full tiles unchanged; in-model,
 * bench/cpu/profile_ab.py: ResNet-50 1.00x, the suite's 17-token ViT, whose products end in
 * 3-row tiles, 1.015-1.026x). The bench's models end in tiles of 14, 7, 2 or 1 rows. A
 * narrow tile (cols <= 16: MobileNetV2's and EfficientNet's 16 output channels, the odd last
 * panel of 144, 240 or 1000) runs one panel, and a partial one stores its columns masked, in
 * place: the full tile spent a second panel's FMAs on a copy of the first, and its rows went
 * through a buffer and rt_act_row_f32; one of 24 or fewer (MobileNetV2's 24-channel
 * projections) runs its second panel at 256 bits. */
RT_API void rt_pgemm_tile_pf_f32(int rows, int64_t cols, int64_t taps, int64_t kc,
                                 const float *const *a, const float *b, int64_t b_tap,
                                 int64_t b_panel, const float *init, int accum, float *c,
                                 int64_t ldc, const float *res, float lo, float hi, int gelu,
                                 const float *pf, int64_t pf_n, int64_t pf_panel) {
    /* R rows of code, the first RS stored */
#define RT_PGEMM_RCLASS_(R, RS)                                                               \
    if (gelu && cols <= RT_PGEMM_NR) /* (GELU: 24 columns at 512 bits) */                    \
        rt_pgemm_tile_avx512(R, RS, 1, 0, 1, 0, taps, kc, a, b, b_tap, b_panel, init, accum,   \
                             c, ldc, cols, res, lo, hi, pf, pf_n, pf_panel);                  \
    else if (gelu)                                                                            \
        rt_pgemm_tile_avx512(R, RS, 2, 0, 1, 0, taps, kc, a, b, b_tap, b_panel, init, accum,   \
                             c, ldc, cols, res, lo, hi, pf, pf_n, pf_panel);                  \
    else if (cols <= RT_PGEMM_NR)                                                             \
        rt_pgemm_tile_avx512(R, RS, 1, 0, 0, 0, taps, kc, a, b, b_tap, b_panel, init, accum,   \
                             c, ldc, cols, res, lo, hi, pf, pf_n, pf_panel);                  \
    else if (RT_PGEMM_HALF && cols <= RT_PGEMM_NR + 8)                                        \
        rt_pgemm_tile_avx512(R, RS, 2, 1, 0, 0, taps, kc, a, b, b_tap, b_panel, init, accum,   \
                             c, ldc, cols, res, lo, hi, pf, pf_n, pf_panel);                  \
    else                                                                                      \
        rt_pgemm_tile_avx512(R, RS, 2, 0, 0, 0, taps, kc, a, b, b_tap, b_panel, init, accum,   \
                             c, ldc, cols, res, lo, hi, pf, pf_n, pf_panel);
    if (rows == RT_PGEMM_MR) {
        RT_PGEMM_RCLASS_(RT_PGEMM_MR, RT_PGEMM_MR)
        return;
    }
    while (rows > 0) {
        const int n = rows < RT_PGEMM_MR / 2 ? rows : RT_PGEMM_MR / 2;
        if (n <= 2) {
            RT_PGEMM_RCLASS_(2, n)
        } else if (n <= 4) {
            RT_PGEMM_RCLASS_(4, n)
        } else {
            RT_PGEMM_RCLASS_(RT_PGEMM_MR / 2, n)
        }
        rows -= n;
        a += n;
        c += n * ldc;
        res = res ? res + n * ldc : res;
        pf_n = 0; /* (the next tile column's weights: prefetched by the first part) */
    }
#undef RT_PGEMM_RCLASS_
}
#endif

#if defined(RT_PGEMM_AVX512)
/* The AVX-512 tile of the few-channel kernels read by rows (the RGB stems: 3x3/2 and 7x7/2
 * of 3 channels), with its rows addressed in place: R <= RT_PGEMM_MR pixels of one output
 * row, pixel r's kernel row kh read at xr[kh] + r * PX (PX = stride across x channels, a
 * constant, so that each broadcast is one load at an immediate offset of one pointer a
 * kernel row), kwc = KW * C values a kernel row, KH kernel rows; NPN panels (b, b + b_panel:
 * KH * kwc rows of 16 weights). The driver's rowwise tile loaded 14 row pointers a kernel
 * row and built them a pixel (pix_h/pix_w divisions, bounds checks); this one takes KH
 * pointers a tile. Each pixel sums its taps in the same order as that tile (kernel rows,
 * then kw * C + c, starting from init): the same bits. */
RT_PGEMM_INLINE void rt_pgemm_rows_avx512(const int R, const int NPN, const int64_t PX,
                                          int64_t KH, int64_t kwc, const float *const *xr,
                                          const float *b, int64_t b_panel, const float *init,
                                          float *c, int64_t ldc, int64_t cols, float lo,
                                          float hi) {
#define RT_PGEMM_RS_(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13)
    const __m512 i0 = _mm512_loadu_ps(init), i1 = _mm512_loadu_ps(init + 16);
#define RT_PGEMM_DECL_(r) __m512 c0_##r = i0, c1_##r = i1;
    RT_PGEMM_RS_(RT_PGEMM_DECL_)
#undef RT_PGEMM_DECL_
    const __mmask16 mlast = (__mmask16)(cols - 16 * (NPN - 1) >= 16
                                            ? 0xFFFF
                                            : (1u << (cols - 16 * (NPN - 1))) - 1u);
    int64_t kh, k;
    for (kh = 0; kh < KH; kh++) {
        const float *p = xr[kh];
        const float *b0 = b + kh * kwc * RT_PGEMM_NR, *b1 = b0 + b_panel;
#define RT_PGEMM_FMA_(r)                                                                      \
    if (r < R) {                                                                              \
        const __m512 v = _mm512_set1_ps(p[r * PX + k]);                                       \
        c0_##r = _mm512_fmadd_ps(v, w0, c0_##r);                                              \
        if (NPN > 1) c1_##r = _mm512_fmadd_ps(v, w1, c1_##r);                                 \
    }
        for (k = 0; k < kwc; k++) {
            const __m512 w0 = _mm512_loadu_ps(b0 + k * RT_PGEMM_NR);
            const __m512 w1 = NPN > 1 ? _mm512_loadu_ps(b1 + k * RT_PGEMM_NR) : w0;
            RT_PGEMM_RS_(RT_PGEMM_FMA_)
        }
#undef RT_PGEMM_FMA_
    }
    {
        const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
#define RT_PGEMM_ST_(r)                                                                       \
    if (r < R) {                                                                              \
        if (NPN == 1) {                                                                       \
            rt_pgemm_st16m(c + r * ldc, mlast, c0_##r, (const float *)0, vlo, vhi);           \
        } else {                                                                              \
            rt_pgemm_st16(c + r * ldc, c0_##r, (const float *)0, vlo, vhi);                   \
            rt_pgemm_st16m(c + r * ldc + 16, mlast, c1_##r, (const float *)0, vlo, vhi);      \
        }                                                                                     \
    }
        RT_PGEMM_RS_(RT_PGEMM_ST_)
#undef RT_PGEMM_ST_
    }
#undef RT_PGEMM_RS_
    (void)b_panel, (void)i1;
}

/* rt_pgemm_rows_avx512 for PX = 6 (stride 2 across, 3 channels: the RGB stems) */
RT_API void rt_pgemm_rows6_f32(int rows, int64_t cols, int64_t KH, int64_t kwc,
                               const float *const *xr, const float *b, int64_t b_panel,
                               const float *init, float *c, int64_t ldc, float lo, float hi) {
#define RT_PGEMM_ROWS_(R)                                                                     \
    case R:                                                                                   \
        if (cols <= RT_PGEMM_NR)                                                              \
            rt_pgemm_rows_avx512(R, 1, 6, KH, kwc, xr, b, b_panel, init, c, ldc, cols, lo,    \
                                 hi);                                                         \
        else                                                                                  \
            rt_pgemm_rows_avx512(R, 2, 6, KH, kwc, xr, b, b_panel, init, c, ldc, cols, lo,    \
                                 hi);                                                         \
        break
    switch (rows) { RT_PGEMM_ROW_CASES_ }
#undef RT_PGEMM_ROWS_
}

/* The dense tiles' dispatch on their reduction C (16, 24, else 32), each through the
 * RT_PGEMM_DENSE_(D) that the function using it defines, D the constant reduction. */
#define RT_PGEMM_BY_C_                                                                        \
    if (C == 16) {                                                                            \
        RT_PGEMM_DENSE_(16)                                                                   \
    } else if (C == 24) {                                                                     \
        RT_PGEMM_DENSE_(24)                                                                   \
    } else {                                                                                  \
        RT_PGEMM_DENSE_(32)                                                                   \
    }

/* rt_pgemm_tile_pf_f32 of a full tile (RT_PGEMM_MR rows), no GELU, on the rows of a dense
 * 1x1 whose whole reduction is one tap of C = kc = 16, 24 or 32 values (MobileNetV2's and
 * EfficientNet-B0's expansions): row r at a[0] + r * C, C a constant, so that each broadcast
 * loads at an immediate offset of one pointer (the pointer tile kept 9 of its 14 row pointers
 * on the stack and reloaded them every step) and the reduction loop has a constant count.
 * Same sums in the same order: the same bits. */
RT_API void rt_pgemm_tile_dense_f32(int64_t C, int64_t cols, const float *const *a,
                                    const float *b, int64_t b_panel, const float *init,
                                    int accum, float *c, int64_t ldc, const float *res,
                                    float lo, float hi, const float *pf, int64_t pf_n,
                                    int64_t pf_panel) {
#define RT_PGEMM_DENSE_(D)                                                                    \
    if (cols <= RT_PGEMM_NR)                                                                  \
        rt_pgemm_tile_avx512(RT_PGEMM_MR, RT_PGEMM_MR, 1, 0, 0, D, 1, D, a, b, 0, b_panel,    \
                             init, accum, c, ldc, cols, res, lo, hi, pf, pf_n, pf_panel);     \
    else if (RT_PGEMM_HALF && cols <= RT_PGEMM_NR + 8)                                        \
        rt_pgemm_tile_avx512(RT_PGEMM_MR, RT_PGEMM_MR, 2, 1, 0, D, 1, D, a, b, 0, b_panel,    \
                             init, accum, c, ldc, cols, res, lo, hi, pf, pf_n, pf_panel);     \
    else                                                                                      \
        rt_pgemm_tile_avx512(RT_PGEMM_MR, RT_PGEMM_MR, 2, 0, 0, D, 1, D, a, b, 0, b_panel,    \
                             init, accum, c, ldc, cols, res, lo, hi, pf, pf_n, pf_panel);
    RT_PGEMM_BY_C_
#undef RT_PGEMM_DENSE_
}

/* n_tiles full tiles of such a dense 1x1 (no residual, no GELU, one reduction block) one
 * after the other down a pixel block, in one call: tile i reads rows x0 + (i * RT_PGEMM_MR +
 * r) * C and stores c + i * RT_PGEMM_MR * ldc, and prefetches its share of the next column's
 * weights, pf_share lines from line i * pf_share of pf (pf_tot in all; NULL: none), as the
 * driver's tile by tile did (the same tiles, the same bits) */
RT_API void rt_pgemm_tiles_dense_f32(int64_t n_tiles, int64_t C, int64_t cols, const float *x0,
                                     const float *b, int64_t b_panel, const float *init,
                                     float *c, int64_t ldc, float lo, float hi, const float *pf,
                                     int64_t pf_share, int64_t pf_tot, int64_t pf_panel) {
    int64_t i;
#define RT_PGEMM_TILES_(D, NPN, HALF)                                                          \
    for (i = 0; i < n_tiles; i++) {                                                           \
        const float *row = x0 + i * RT_PGEMM_MR * D;                                          \
        const int64_t l0 = i * pf_share, l1 = l0 + pf_share < pf_tot ? l0 + pf_share : pf_tot; \
        rt_pgemm_tile_avx512(RT_PGEMM_MR, RT_PGEMM_MR, NPN, HALF, 0, D, 1, D, &row, b, 0,     \
                             b_panel, init, 0, c + i * RT_PGEMM_MR * ldc, ldc, cols,          \
                             (const float *)0, lo, hi,                                        \
                             pf ? pf + l0 * RT_PGEMM_NR : pf, pf && l1 > l0 ? l1 - l0 : 0,    \
                             pf_panel);                                                       \
    }
#define RT_PGEMM_DENSE_(D)                                                                    \
    if (cols <= RT_PGEMM_NR) {                                                                \
        RT_PGEMM_TILES_(D, 1, 0)                                                              \
    } else if (RT_PGEMM_HALF && cols <= RT_PGEMM_NR + 8) {                                    \
        RT_PGEMM_TILES_(D, 2, 1)                                                              \
    } else {                                                                                  \
        RT_PGEMM_TILES_(D, 2, 0)                                                              \
    }
    RT_PGEMM_BY_C_
#undef RT_PGEMM_DENSE_
#undef RT_PGEMM_TILES_
}
#endif

/* rt_pconv_nhwc_f32 (the end of this file): x: (N,H,W,C), wp: packed as above (G, NP,
 * KH*KW*C/group, 16), b: (M) or NULL, r: (N,OH,OW,M) or NULL, y: (N,OH,OW,M); y = act(conv(x, w) + b + r), act NULL: none.
 * Geometry is RtConvGeom with in[0] = out[0] = k[0] = 1 (2-D), any KH*KW (reduction blocks
 * of at most RT_PGEMM_MAX_TAPS taps, or a whole kernel of few channels read by rows).
 * Blocking (BLIS's, over the indirect reduction): the reduction is cut into blocks of about
 * RT_PGEMM_KC values (whole taps of all channels, or one tap's channels in even chunks),
 * the pixels (any row of the image: pixels are flattened) into blocks of rt_pgemm_mc; for
 * each, every panel's block of weights (KC x 16 floats: half of L1 at 256, in L2 on
 * AVX-512) stays near while the pixel block's tiles stream past it, their input rows (MC x
 * KC floats) staying in L2 (abuf: MR x KC floats on the stack, 42 KiB on AVX-512). Later
 * reduction blocks add into the tiles they find. The epilogue runs with the last block, on
 * each tile as it is stored: bias in the accumulators' start (first block), residual and
 * ReLU/Clip in registers (a full tile), other activations (and partial tiles) through
 * rt_act_row_f32 on the stored rows. */
typedef struct RtPconvTask {
    const float *x, *wp, *b, *r;
    float *y;
    const RtConvGeom *g;
    const RtAct *act;
    int64_t mc;       /* pixels a block (rt_pgemm_mc) */
    int64_t n_pc, pc; /* pixel chunks of an image and group, pixels a chunk (mc x) */
    int64_t n_jc, jc; /* panel chunks, panels a chunk (RT_PGEMM_NP x) */
    int64_t n_rows;   /* the row split (rt_pconv_nhwc_rows_task_f32): one image and group,
                       * its output rows cut into n_rows even parts, a task each */
    int by_pixels;    /* ... or, fewer rows than tasks, its pixels cut into n_rows parts */
    /* a second operand (rt_pconv2_nhwc_par_f32; NULL: none): a 1x1 of unit stride whose
     * reduction runs on over x2's channels, read at g2's strides */
    const float *x2;
    const RtConvGeom *g2;
    const RtPar *par; /* its workers' scratch: rows copied for a whole pixel block (apk) */
} RtPconvTask;

/* Rows of a pixel block copied to scratch (rt_pconv_nhwc_block_f32's apk, AVX-512): 768 + 16
 * floats apart, a reduction block's values and 16 more, so that a tile's 14 rows fall in 14
 * sets of the L1 (49 lines apart), not in one */
#define RT_PGEMM_APK_LD (768 + 16)

/* The scratch bytes a worker needs for it on a layer of P output pixels whose input rows
 * are C * sw floats apart (sw: the stride across): the AVX-512 path's pixel block (rt_pgemm_mc
 * with its 14 x 16) of rows RT_PGEMM_APK_LD floats, where those rows are a multiple of 4 KiB
 * apart (the copied ones), else 0. Not the build's path: the compiler sizes the arena with it
 * (backend/c), whatever the bundle is built for; other paths copy none. */
RT_API int64_t rt_pgemm_apk_bytes(int64_t P, int64_t C, int64_t sw) {
    if (P <= 0 || (C * sw) % 1024 != 0) return 0;
    return rt_pgemm_mc_for(P, RT_PGEMM_AVX512_MR, RT_PGEMM_AVX512_MC_TILES) * RT_PGEMM_APK_LD *
           (int64_t)sizeof(float);
}

/* Pixels [p_lo, p_hi) and panels [j_lo, j_hi) of image n, group grp: every reduction block
 * in order, as the whole convolution does them (p_lo a multiple of k->mc, j_lo of
 * RT_PGEMM_NP, so that each tile is the one of the serial loop, bit for bit). */
RT_API void rt_pconv_nhwc_block_f32(const RtPconvTask *k, int64_t n, int64_t grp, int64_t p_lo,
                                    int64_t p_hi, int64_t j_lo, int64_t j_hi, float *apk) {
    const float *x = k->x, *wp = k->wp, *b = k->b, *r = k->r;
    float *y = k->y;
    const RtConvGeom *g = k->g;
    const RtAct *act = k->act;
    const float *x2 = k->x2;
    const RtConvGeom *g2 = k->g2;
    /* two operands: the reduction runs over x's C channels, then x2's C2, as taps of seg
     * channels (the packed rows of both weights follow each other: k = tap*seg + c); tap
     * u < na reads x's pixel row, the others x2's at the pixel's strided position */
    const int64_t C2 = x2 ? g2->c : 0, seg = x2 ? rt_pgemm_gcd(g->c, C2) : 1;
    const int64_t na = g->c / seg;
    const int64_t C = g->c, M = g->m, G = g->group, cg = x2 ? seg : C / G, mg = M / G;
    const int64_t H = g->in[1], W = g->in[2], OH = g->out[1], OW = g->out[2];
    const int64_t KH = g->k[1], KW = g->k[2], P = OH * OW;
    const int64_t taps = x2 ? (C + C2) / seg : KH * KW, K = taps * cg;
    const int64_t np = (mg + RT_PGEMM_NR - 1) / RT_PGEMM_NR, panel = K * RT_PGEMM_NR;
    const RtAct no_act = {RT_ACT_NONE, 0.0, 0.0}; /* a residual without activation */
    /* reduction blocks: tb taps x cc channels, at most RT_PGEMM_MAX_TAPS taps (one
     * indirection table), except a kernel read whole by kernel rows (rowwise below: KH row
     * pointers a pixel), which a patch stem is: ViT-B/16's 16x16/16 of 3 channels, 256 taps
     * of 768 values in one block, 16 row pointers of 48 */
    const int by_rows = !x2 && taps > 1 && taps * cg <= RT_PGEMM_KC && cg < RT_PGEMM_GATHER &&
                        g->d[2] == 1 && G == 1 && KH <= RT_PGEMM_MAX_TAPS;
    const int64_t n_cc = cg >= RT_PGEMM_KC ? (cg + RT_PGEMM_KC - 1) / RT_PGEMM_KC : 1;
    const int64_t tb_kc = cg >= RT_PGEMM_KC ? 1 : RT_PGEMM_KC / cg;
    const int64_t cc = (cg + n_cc - 1) / n_cc,
                  tb = tb_kc > RT_PGEMM_MAX_TAPS && !by_rows ? RT_PGEMM_MAX_TAPS : tb_kc;
    /* ReLU and Clip clamp in the tile's registers; other activations run on stored rows */
    const int act_clamps = !act || act->kind == RT_ACT_NONE || act->kind == RT_ACT_RELU ||
                           act->kind == RT_ACT_CLIP;
    const float lo = act && act->kind == RT_ACT_RELU   ? 0.0f
                     : act && act->kind == RT_ACT_CLIP ? (float)act->alpha
                                                       : -INFINITY;
    const float hi = act && act->kind == RT_ACT_CLIP ? (float)act->beta : INFINITY;
#if defined(RT_PGEMM_AVX512)
    /* GELU too, on the tile's sums (rt_pgemm_gelu_st) */
    const int act_gelu = act && act->kind == RT_ACT_GELU;
#else
    const int act_gelu = 0;
#endif
    /* 1x1, stride 1, no padding (every product, most 1x1 convolutions): pixel q reads row q
     * of x, and a tile's row pointers need no coordinates */
    const int dense = !x2 && taps == 1 && g->s[1] == 1 && g->s[2] == 1 && g->pad[1] == 0 &&
                      g->pad[2] == 0 && OH == H && OW == W;
    const float *ind[RT_PGEMM_MAX_TAPS * RT_PGEMM_MR], *arow[RT_PGEMM_MR];
    float tile[RT_PGEMM_MR * RT_PGEMM_NT], init[RT_PGEMM_NT], abuf[RT_PGEMM_MR][RT_PGEMM_KC];
    int64_t tap_h[RT_PGEMM_MAX_TAPS], tap_w[RT_PGEMM_MAX_TAPS]; /* a tap's input offset */
    int64_t pix_h[RT_PGEMM_MC], pix_w[RT_PGEMM_MC]; /* a pixel's first input row, column */
    int64_t t0, c0, pb, j0, p0;
#if defined(RT_PGEMM_AVX512)
    /* a kernel read by rows at stride 2 across of 3 channels, of a short reduction (the 3x3
     * RGB stems: 27 values): tiles of the pixels of one output row, rt_pgemm_rows6_f32; a
     * kernel row of a tile that crosses the image's left or right edge is copied to abuf
     * with its zeros, one above or below it is the zero row. Not ResNet-50's 7x7/2 (147
     * values, 85-88% of peak on the rowwise tile already): in-model it ran 1.02-1.03x the
     * time on this one (no prefetch of its 3.2 MB of output rows) */
    if (by_rows && !r && !act_gelu && C * g->s[2] == 6 && KH * KW * C < 64 &&
        (RT_PGEMM_MR - 1) * 6 + KW * C <= RT_PGEMM_KC &&
        KH * ((RT_PGEMM_MR - 1) * 6 + KW * C) <= RT_PGEMM_MR * RT_PGEMM_KC) {
        const int64_t kwc = KW * C, span = (RT_PGEMM_MR - 1) * 6 + kwc;
        const float *xg = x + n * H * W * C;
        float *ebuf = &abuf[0][0];
        const float *xr[RT_PGEMM_MAX_TAPS];
        int64_t q = p_lo;
        while (q < p_hi) {
            const int64_t oh = q / OW, ow = q % OW;
            const int64_t rows0 = OW - ow < RT_PGEMM_MR ? OW - ow : RT_PGEMM_MR;
            const int64_t rows = p_hi - q < rows0 ? p_hi - q : rows0;
            const int64_t iw0 = ow * g->s[2] - g->pad[2];
            const int64_t iw1 = (ow + rows - 1) * g->s[2] - g->pad[2] + KW;
            const int inside = iw0 >= 0 && iw1 <= W;
            float *yt = y + (n * P + q) * M;
            int64_t kh;
            for (kh = 0; kh < KH; kh++) {
                const int64_t ih = oh * g->s[1] - g->pad[1] + kh * g->d[1];
                if (ih < 0 || ih >= H) {
                    xr[kh] = rt_pgemm_zero;
                } else if (inside) {
                    xr[kh] = xg + (ih * W + iw0) * C;
                } else {
                    float *dst = ebuf + kh * span;
                    int64_t iw, c;
                    for (iw = iw0; iw < iw1; iw++)
                        for (c = 0; c < C; c++)
                            *dst++ = iw < 0 || iw >= W ? 0.0f : xg[(ih * W + iw) * C + c];
                    xr[kh] = ebuf + kh * span;
                }
            }
            for (j0 = j_lo; j0 < j_hi; j0 += RT_PGEMM_NP) {
                const int64_t m0 = j0 * RT_PGEMM_NR;
                const int64_t cols = M - m0 < RT_PGEMM_NT ? M - m0 : RT_PGEMM_NT;
                const float *bp = wp + j0 * panel;
                int64_t j;
                for (j = 0; j < RT_PGEMM_NT; j++) init[j] = b && j < cols ? b[m0 + j] : 0.0f;
                rt_pgemm_rows6_f32((int)rows, cols, KH, kwc, xr, bp, j0 + 1 < np ? panel : 0,
                                   init, yt + m0, M, lo, hi);
                if (!act_clamps) rt_act_rows_f32(yt + m0, M, rows, cols, act);
            }
            q += rows;
        }
        return;
    }
#endif
    for (t0 = 0; t0 < taps; t0 += tb)
        for (c0 = 0; c0 < cg; c0 += cc) {
            const int64_t nt = taps - t0 < tb ? taps - t0 : tb;
            const int64_t kc = cg - c0 < cc ? cg - c0 : cc;
            const int first = t0 == 0 && c0 == 0;
            const int last = t0 + nt >= taps && c0 + kc >= cg;
            /* whole taps of few channels: the tile's rows are gathered (B's rows of
             * the block are contiguous then) */
            const int gather = !x2 && nt > 1 && kc == cg && cg < RT_PGEMM_GATHER;
            /* ... or, one group, unit dilation across and the whole kernel in this block, read
             * by kernel rows: a kernel row's KW taps are one run of KW*cg values of x,
             * read in place through KH row pointers a pixel (MobileNetV2's 3x3/2 stem of
             * 3 channels: the gather, 9 bounds checks and 3 runs copied a pixel, cost as
             * much as the pixel's 27 x 32 FMAs). Same sums in the same order: the same
             * bits as gathered */
            const int rowwise = gather && nt == taps && g->d[2] == 1 && G == 1;
            /* rows of one tap whose stride is a multiple of 4 KiB (the stride times C a
             * multiple of 1024: BERT's 3072-wide product, ResNet-50's last stages and its
             * 1x1/2 of 512 channels) fall in one set of an 8-way L1 (bits 6-11 of the
             * address): a tile's 14 rows evict each other, and the AVX-512 tile ran at 76%
             * of its rate on them (Zen 4). Such a tile's rows are copied to abuf first, as
             * gathered rows are: one tile a pixel block, copied once for all its panels
             * (whose weights then come from L2 or L3, prefetched a column ahead: BERT's
             * 3072x768 ran 0.94x the time of a copy per tile and panel pair). Where the
             * workers' scratch holds it (apk: the bundle's arena, rt_pgemm_apk_bytes), the
             * whole pixel block's rows are copied there instead, RT_PGEMM_APK_LD apart, and
             * its tiles run as uncopied rows do (a panel pair's weights stay in L2 for all
             * of them, not streamed from L3 once a tile): BERT's 3072x768 in-model 0.945x
             * the time, lab with weights flushed 0.92x (ViT's 0.95x) */
            const int64_t row_step = x2 && t0 >= na ? C2 * g2->s[2] : C * g->s[2];
            const int copy =
                !gather && nt == 1 && (row_step & 1023) == 0 && RT_PGEMM_MR > 8;
            /* two operands, a block of several taps whose x2 rows are so apart (ResNet-50's
             * 14x14 block: 256 + 512 channels, x2's rows 2 x 512 floats apart): each row's
             * taps are copied to abuf as one run of nt*kc, as gathered rows are (in-model,
             * read in place, that block's product ran 1.15x the time of the two it replaced) */
            const int copy2 = x2 && nt > 1 && kc == cg && t0 + nt > na &&
                              ((C2 * g2->s[2]) & 1023) == 0 && RT_PGEMM_MR > 8;
            const float *xg = x + n * H * W * C + grp * cg + c0;
            int64_t t;
            for (t = 0; !rowwise && t < nt; t++) { /* (rowwise: nt may pass the table) */
                tap_h[t] = (t0 + t) / KW * g->d[1];
                tap_w[t] = (t0 + t) % KW * g->d[2];
            }
            /* gathering or copying: one tile a pixel block, its rows gathered or copied
             * once for all its panels */
            const int packed = copy && apk && !x2 && RT_PGEMM_AVX512_ONLY_; /* (to apk) */
            const int64_t mc = gather || (copy && !packed) || copy2 ? RT_PGEMM_MR : k->mc;
            int64_t gathered = -1; /* the tile whose rows abuf holds */
            for (pb = p_lo; pb < p_hi; pb += mc) {
                const int64_t pe = pb + mc < p_hi ? pb + mc : p_hi;
                int64_t q;
                /* (dense rows need no coordinates: a block's divisions cost 16->96's
                 * 14x32 tiles of 16 reduction steps ~5% of their time on Zen 4) */
                for (q = pb; !dense && q < pe; q++) {
                    pix_h[q - pb] = q / OW * g->s[1] - g->pad[1];
                    pix_w[q - pb] = q % OW * g->s[2] - g->pad[2];
                }
                for (q = pb; packed && q < pe; q++) {
                    const int64_t ih = dense ? 0 : pix_h[q - pb] + tap_h[0];
                    const int64_t iw = dense ? 0 : pix_w[q - pb] + tap_w[0];
                    const float *src = dense ? xg + q * C
                                       : ih < 0 || ih >= H || iw < 0 || iw >= W
                                           ? rt_pgemm_zero
                                           : xg + (ih * W + iw) * C;
                    float *dst = apk + (q - pb) * RT_PGEMM_APK_LD;
                    int64_t c;
                    for (c = 0; c < kc; c++) dst[c] = src[c];
                }
                for (j0 = j_lo; j0 < j_hi; j0 += RT_PGEMM_NP) {
                    /* the tiles' columns of this group: [m0, m0 + cols) */
                    const int64_t m0 = j0 * RT_PGEMM_NR;
                    const int64_t cols = mg - m0 < RT_PGEMM_NT ? mg - m0 : RT_PGEMM_NT;
                    const int64_t mo = grp * mg + m0;
                    const float *bp = wp + (grp * np + j0) * panel + (t0 * cg + c0) * RT_PGEMM_NR;
                    /* a missing second panel repeats the first: its columns are dropped */
                    const int64_t b_panel = j0 + 1 < np ? panel : 0;
                    /* the next tile column's block of weights, nt*kc lines a panel: each
                     * tile of this pixel block prefetches its share while it computes, so
                     * that the weights (cold in a model: read once per pixel block) come in
                     * at an even pace instead of stalling that column's first tile (none
                     * when gathering: the few weights stay in cache across pixel tiles) */
                    const int64_t n_tiles = (pe - pb + RT_PGEMM_MR - 1) / RT_PGEMM_MR;
                    const int64_t pf_share = (nt * kc + n_tiles - 1) / n_tiles;
                    const float *pf_next =
                        !gather && j0 + RT_PGEMM_NP < j_hi ? bp + RT_PGEMM_NP * panel : NULL;
                    const int pf_second = RT_PGEMM_NP > 1 && j0 + RT_PGEMM_NP + 1 < np;
                    int64_t j;
                    for (j = 0; j < RT_PGEMM_NT; j++)
                        init[j] = b && j < cols ? b[mo + j] : 0.0f;
                    int64_t done = 0; /* the block's pixels run in one call below */
#if defined(RT_PGEMM_AVX512)
                    /* a dense 1x1 of 16-32 channels without residual (no output-row
                     * prefetch: RT_PGEMM_YPF_K): its full tiles in one call */
                    if (dense && !r && act_clamps && kc == C && pe - pb >= RT_PGEMM_MR &&
                        (C == 16 || C == 24 || C == 32)) {
                        done = (pe - pb) / RT_PGEMM_MR * RT_PGEMM_MR;
                        rt_pgemm_tiles_dense_f32(done / RT_PGEMM_MR, C, cols, xg + pb * C, bp,
                                                 b_panel, init, y + (n * P + pb) * M + mo, M,
                                                 lo, hi, pf_next, pf_share, nt * kc,
                                                 pf_second ? panel : 0);
                    }
#endif
                    for (p0 = pb + done; p0 < pe; p0 += RT_PGEMM_MR) {
                        const int64_t rows = pe - p0 < RT_PGEMM_MR ? pe - p0 : RT_PGEMM_MR;
                        /* AVX-512 stores short and narrow tiles in place too */
                        const int direct = (rows == RT_PGEMM_MR || RT_PGEMM_SHORT) &&
                                           (cols == RT_PGEMM_NT || RT_PGEMM_PART);
                        float *yt = y + (n * P + p0) * M + mo;
                        /* prefetched rows end */
                        const int64_t pf_end = gather || copy2 ? p_hi : pe;
                        const float *rt = r ? r + (yt - y) : NULL;
                        const float *const *a = ind;
                        const int64_t pf_lo = (p0 - pb) / RT_PGEMM_MR * pf_share;
                        const int64_t pf_hi =
                            pf_lo + pf_share < nt * kc ? pf_lo + pf_share : nt * kc;
                        int64_t i, i2, nta = nt, kca = kc, b_tap = cg * RT_PGEMM_NR;
#if defined(RT_PGEMM_AVX512) /* the tile spreads its share over its steps */
                        const float *pf = pf_next ? pf_next + pf_lo * RT_PGEMM_NR : NULL;
                        const int64_t pf_n = pf_next && pf_hi > pf_lo ? pf_hi - pf_lo : 0;
                        const int64_t pf_panel = pf_second ? panel : 0;
#else
                        for (i = pf_lo; pf_next && i < pf_hi; i++) {
                            RT_PGEMM_PREFETCH(pf_next + i * RT_PGEMM_NR);
                            if (pf_second) RT_PGEMM_PREFETCH(pf_next + panel + i * RT_PGEMM_NR);
                        }
#endif
                        /* a later tile of the column (RT_PGEMM_YPF_TILES ahead): its output
                         * rows (stored, or read and stored by a later reduction block) and
                         * its residual, 14 rows M apart that no hardware prefetcher follows;
                         * where the reduction is short (ResNet-50's 64->256 with a residual:
                         * 64 steps) the tile stalled on them. Into L2, not L1: rows 1 or 2
                         * KiB apart (M = 256, 512) fall in 4 or 2 groups of L1 sets (bits
                         * 6-11 of the address), and the next tile's 28 output and 28
                         * residual lines, prefetched into L1 beside the tile's own, evicted
                         * each other there; L2's sets (bits 6-16) keep them apart.
                         * Gathered tiles are pixel blocks of one tile: their rows are those
                         * of the block two ahead (the 7x7 stem's 3.2 MB of output had no
                         * prefetch) */
                        if (p0 + RT_PGEMM_YPF_TILES * RT_PGEMM_MR < pf_end &&
                            (nt * kc >= RT_PGEMM_YPF_K || (last && rt)))
                            for (i = 0; i < RT_PGEMM_MR; i++) {
                                const int64_t ahead = RT_PGEMM_YPF_TILES * RT_PGEMM_MR + i;
                                if (p0 + ahead >= pf_end) break;
                                RT_PGEMM_PREFETCH_L2(yt + ahead * M);
                                RT_PGEMM_PREFETCH_L2(yt + ahead * M + cols - 1);
                                if (last && rt) {
                                    RT_PGEMM_PREFETCH_L2(rt + ahead * M);
                                    RT_PGEMM_PREFETCH_L2(rt + ahead * M + cols - 1);
                                }
                            }
                        /* a pixel's kernel row inside the image across is read in place;
                         * one in the padding across (the image's first and last columns)
                         * is gathered to abuf with its zeros, one above or below is the
                         * zero row. A pixel whose whole window is inside (all but the
                         * image's border) takes KH pointers dh input rows apart: the
                         * bounds checks of each kernel row cost the 7x7 stem's driver
                         * ~0.11 ms a run, 5% of its time (Zen 4) */
                        for (i = 0; rowwise && gathered != p0 && i < RT_PGEMM_MR; i++) {
                            const int64_t qi = p0 - pb + (i < rows ? i : 0);
                            const int64_t iw0 = pix_w[qi], ih0 = pix_h[qi], dh = g->d[1];
                            const int inside = iw0 >= 0 && iw0 + KW <= W;
                            /* the kernel columns inside the image: [kw_lo, kw_hi) */
                            const int64_t kw_lo = iw0 >= 0 ? 0 : -iw0 < KW ? -iw0 : KW;
                            const int64_t kw_in = W - iw0 < KW ? W - iw0 : KW;
                            const int64_t kw_hi = kw_in > kw_lo ? kw_in : kw_lo;
                            int64_t kh, c;
                            if (inside && ih0 >= 0 && ih0 + (KH - 1) * dh < H) {
                                const float *src = xg + (ih0 * W + iw0) * C;
                                for (kh = 0;; src += dh * W * C) { /* no step past the last */
                                    ind[kh * RT_PGEMM_MR + i] = src;
                                    if (++kh == KH) break;
                                }
                                continue;
                            }
                            for (kh = 0; kh < KH; kh++) {
                                const int64_t ih = ih0 + kh * dh;
                                float *dst = abuf[i] + kh * KW * cg;
                                if (ih < 0 || ih >= H) {
                                    ind[kh * RT_PGEMM_MR + i] = rt_pgemm_zero;
                                    continue;
                                }
                                if (inside) {
                                    ind[kh * RT_PGEMM_MR + i] = xg + (ih * W + iw0) * C;
                                    continue;
                                }
                                /* one group: the columns inside are one run of x (none
                                 * where the window lies in the padding across) */
                                for (c = 0; c < kw_lo * cg; c++) dst[c] = 0.0f;
                                if (kw_hi > kw_lo) {
                                    const float *src = xg + (ih * W + iw0 + kw_lo) * C;
                                    for (c = kw_lo * cg; c < kw_hi * cg; c++)
                                        dst[c] = src[c - kw_lo * cg];
                                }
                                for (c = kw_hi * cg; c < KW * cg; c++) dst[c] = 0.0f;
                                ind[kh * RT_PGEMM_MR + i] = dst;
                            }
                        }
                        if (rowwise) {
                            gathered = p0;
                            nta = KH;
                            kca = KW * cg;
                            b_tap = KW * cg * RT_PGEMM_NR; /* a kernel row's weights */
                        }
                        for (i = 0; dense && i < RT_PGEMM_MR; i++)
                            ind[i] = xg + (p0 + (i < rows ? i : 0)) * C;
                        for (i = 0; x2 && i < RT_PGEMM_MR; i++) {
                            const int64_t px = p0 + (i < rows ? i : 0), qi = px - pb;
                            const float *x2p =
                                x2 + ((n * g2->in[1] + pix_h[qi] * g2->s[1]) * g2->in[2] +
                                      pix_w[qi] * g2->s[2]) * C2 + c0;
                            for (t = 0; t < nt; t++) {
                                const int64_t u = t0 + t;
                                ind[t * RT_PGEMM_MR + i] = u < na
                                                               ? x + (n * P + px) * C + u * seg + c0
                                                               : x2p + (u - na) * seg;
                            }
                        }
                        for (i = 0; !x2 && !dense && !rowwise && i < RT_PGEMM_MR &&
                                    !(gather && gathered == p0);
                             i++) {
                            const int64_t qi = p0 - pb + (i < rows ? i : 0);
                            for (t = 0; t < nt; t++) {
                                const int64_t ih = pix_h[qi] + tap_h[t];
                                const int64_t iw = pix_w[qi] + tap_w[t];
                                ind[t * RT_PGEMM_MR + i] =
                                    ih < 0 || ih >= H || iw < 0 || iw >= W
                                        ? rt_pgemm_zero
                                        : xg + (ih * W + iw) * C;
                            }
                        }
                        if ((gather || copy2) && !rowwise) { /* one row of nt*kc */
                            if (gathered != p0)
                                for (i = 0; i < RT_PGEMM_MR; i++) {
                                    float *dst = abuf[i];
                                    /* taps whose rows follow each other in x (a
                                     * kernel row inside the image) copy as one run */
                                    for (t = 0; t < nt;) {
                                        const float *src = ind[t * RT_PGEMM_MR + i];
                                        int64_t len = kc, c;
                                        for (t++; t < nt && src != rt_pgemm_zero &&
                                                  ind[t * RT_PGEMM_MR + i] == src + len;
                                             t++)
                                            len += kc;
                                        for (c = 0; c < len; c++) *dst++ = src[c];
                                    }
                                    arow[i] = abuf[i];
                                }
                            gathered = p0;
                            a = arow;
                            nta = 1;
                            kca = nt * kc;
                        }
                        if (packed) {
                            for (i = 0; i < RT_PGEMM_MR; i++)
                                arow[i] = apk + (p0 - pb + (i < rows ? i : 0)) * RT_PGEMM_APK_LD;
                            a = arow;
                        } else if (copy) {
                            for (i = 0; i < RT_PGEMM_MR && gathered != p0; i++) {
                                const float *src = ind[i];
                                int64_t c;
                                for (c = 0; c < kc; c++) abuf[i][c] = src[c];
                                arow[i] = abuf[i];
                            }
                            gathered = p0;
                            a = arow;
                        }
                        if (direct) { /* the epilogue in registers where it can be */
#if defined(RT_PGEMM_AVX512)
                            if (dense && rows == RT_PGEMM_MR && !(last && act_gelu) &&
                                kca == C && (C == 16 || C == 24 || C == 32))
                                rt_pgemm_tile_dense_f32(C, cols, a, bp, b_panel, init, !first,
                                                        yt, M, last ? rt : NULL,
                                                        last ? lo : -INFINITY,
                                                        last ? hi : INFINITY, pf, pf_n,
                                                        pf_panel);
                            else
                            rt_pgemm_tile_pf_f32((int)rows, cols, nta, kca, a, bp,
                                                 b_tap, b_panel, init, !first, yt, M,
                                                 last ? rt : NULL, last ? lo : -INFINITY,
                                                 last ? hi : INFINITY, last && act_gelu, pf,
                                                 pf_n, pf_panel);
#else

                            rt_pgemm_tile_f32(nta, kca, a, bp, b_tap, b_panel,
                                              init, !first, yt, M, last ? rt : NULL,
                                              last ? lo : -INFINITY, last ? hi : INFINITY);
#endif
                            if (last && !act_clamps && !act_gelu)
                                rt_act_rows_f32(yt, M, rows, cols, act);
                            continue;
                        }
                        if (!first)
                            for (i2 = 0; i2 < rows; i2++)
                                for (j = 0; j < cols; j++)
                                    tile[i2 * RT_PGEMM_NT + j] = yt[i2 * M + j];
#if defined(RT_PGEMM_AVX512)
                        rt_pgemm_tile_pf_f32((int)rows, RT_PGEMM_NT, nta, kca, a, bp,
                                             b_tap, b_panel, init, !first, tile,
                                             RT_PGEMM_NT, NULL, -INFINITY, INFINITY, 0, pf,
                                             pf_n, pf_panel);
#else
#if defined(RT_PGEMM_AVX2)
                        if (rows == 1)
                            rt_pgemm_row_f32(nta, kca, a, bp, b_tap, init, !first,
                                             tile);
                        else
#endif
                            rt_pgemm_tile_f32(nta, kca, a, bp, b_tap, b_panel,
                                              init, !first, tile, RT_PGEMM_NT, NULL,
                                              -INFINITY, INFINITY);
#endif
                        for (i2 = 0; i2 < rows; i2++)
                            for (j = 0; j < cols; j++)
                                yt[i2 * M + j] = tile[i2 * RT_PGEMM_NT + j];
                        if (last && (act || r))
                            for (i2 = 0; i2 < rows; i2++)
                                rt_act_row_f32(yt + i2 * M, rt ? rt + i2 * M : NULL, cols,
                                               act ? act : &no_act);
                    }
                }
            }
        }
}

/* Where the pixels of output rows [0, row) end, rounded to the nearest whole tile (the
 * tiles of the serial loop: every block starts at a multiple of RT_PGEMM_MR), P past the
 * last row. */
RT_API int64_t rt_pconv_row_pixel(const RtConvGeom *g, int64_t row) {
    const int64_t P = g->out[1] * g->out[2], q = row * g->out[2];
    const int64_t t = (q + RT_PGEMM_MR / 2) / RT_PGEMM_MR * RT_PGEMM_MR;
    return row >= g->out[1] || t > P ? P : t;
}

/* Where part i of the image's P pixels cut into n even parts begins (P for i = n): at any
 * pixel where a short tile sums each row as a full one does (RT_PGEMM_SHORT), else rounded to
 * the nearest whole tile as rt_pconv_row_pixel does (AVX2's one-row tile sums in another
 * order). */
RT_API int64_t rt_pconv_part_pixel(const RtConvGeom *g, int64_t n, int64_t i) {
    const int64_t P = g->out[1] * g->out[2], q = rt_par_part(P, n, i);
    const int64_t t = RT_PGEMM_SHORT ? q : (q + RT_PGEMM_MR / 2) / RT_PGEMM_MR * RT_PGEMM_MR;
    return i >= n || t > P ? P : t;
}

/* Worker w's scratch for copied rows (rt_pconv_nhwc_block_f32's apk), NULL where the arena
 * has none for it (a bundle compiled before it asked, a serial call) */
#if defined(RT_PGEMM_APK_STATIC) /* the kernel lab: serial calls copy to a static buffer */
static float rt_pgemm_apk_static[RT_PGEMM_MC * RT_PGEMM_APK_LD];
#endif
RT_API float *rt_pconv_apk(const RtPconvTask *k, int worker) {
    const int64_t need = k->mc * RT_PGEMM_APK_LD * (int64_t)sizeof(float);
#if defined(RT_PGEMM_APK_STATIC)
    if (!k->par) return rt_pgemm_apk_static;
#endif
    return RT_PGEMM_AVX512_ONLY_ && k->par && k->par->scratch &&
                   k->par->scratch_stride >= need
               ? (float *)rt_par_scratch(k->par, worker)
               : (float *)0;
}

/* Task of the row split: output rows [part task, part task + 1) of the one image, every
 * panel; by_pixels: pixels [part task, part task + 1) of the n_rows pixel parts. */
RT_API void rt_pconv_nhwc_rows_task_f32(void *arg, int64_t task, int worker) {
    const RtPconvTask *k = (const RtPconvTask *)arg;
    const RtConvGeom *g = k->g;
    const int64_t np = (g->m + RT_PGEMM_NR - 1) / RT_PGEMM_NR;
    const int64_t p_lo = k->by_pixels
                             ? rt_pconv_part_pixel(g, k->n_rows, task)
                             : rt_pconv_row_pixel(g, rt_par_part(g->out[1], k->n_rows, task));
    const int64_t p_hi =
        k->by_pixels ? rt_pconv_part_pixel(g, k->n_rows, task + 1)
                     : rt_pconv_row_pixel(g, rt_par_part(g->out[1], k->n_rows, task + 1));
    if (p_lo < p_hi) rt_pconv_nhwc_block_f32(k, 0, 0, p_lo, p_hi, 0, np, rt_pconv_apk(k, worker));
}

RT_API void rt_pconv_nhwc_task_f32(void *arg, int64_t task, int worker) {
    const RtPconvTask *k = (const RtPconvTask *)arg;
    const RtConvGeom *g = k->g;
    const int64_t P = g->out[1] * g->out[2], np = (g->m / g->group + RT_PGEMM_NR - 1) / RT_PGEMM_NR;
    const int64_t jc = task % k->n_jc, pc = task / k->n_jc % k->n_pc;
    const int64_t ng = task / k->n_jc / k->n_pc, n = ng / g->group, grp = ng % g->group;
    const int64_t p_lo = pc * k->pc, p_hi = p_lo + k->pc < P ? p_lo + k->pc : P;
    const int64_t j_lo = jc * k->jc, j_hi = j_lo + k->jc < np ? j_lo + k->jc : np;
    if (p_lo < p_hi && j_lo < j_hi)
        rt_pconv_nhwc_block_f32(k, n, grp, p_lo, p_hi, j_lo, j_hi, rt_pconv_apk(k, worker));
}

#ifndef RT_PCONV_ROW_SPLIT /* a -D 0 to try the chunks of pixel blocks and panels instead */
#define RT_PCONV_ROW_SPLIT 1
#endif
/* A layer with fewer pixel blocks than tasks splits by rows only while its weights are at
 * most this many times its input and output together: by rows every worker reads every
 * weight, by panels half of them (and every input pixel, half of each written by the other
 * worker). 5 takes MobileNetV2's and EfficientNet-B0's 7x7 expansions and projections
 * (weights 2.6-4.9x their activations) but not their last 320 -> 1280 (5.2x, read by a
 * global pool split by channels), EfficientNet-B0's 1152 -> 320 (5.1x) nor ResNet-50's
 * 7x7 layers (7-8.4x). Two threads, A/B against 2 (bench/cpu/parallel-profile.md, mb2t):
 * MobileNetV2 0.99x on one L3, 0.97x on two; EfficientNet-B0 1.02x and 0.97x (within the
 * runs' 2-3% spread) */
#ifndef RT_PCONV_ROW_WEIGHTS
#define RT_PCONV_ROW_WEIGHTS 5
#endif

/* rt_pconv_nhwc_f32 with its tiles shared among par's workers (rt_par.h; NULL: serial):
 * tasks are (image, group, chunk of pixel blocks, chunk of panels); pixels split first,
 * panels when an image has too few pixel blocks. Except one image of one group (a model's
 * layers at batch 1) of at least two rows a worker: its output rows are cut into even parts,
 * every panel in each, as rt_conv_nhwc_fused_par_f32 cuts a depthwise layer's rows (the
 * same count, rt_par_part; the ends rounded to whole tiles); where it has fewer pixel blocks
 * than tasks (MobileNetV2's and EfficientNet-B0's layers at 28x28 and below) only while its
 * weights are few enough (RT_PCONV_ROW_WEIGHTS). Split by panels, each 1x1
 * worker read every pixel and wrote half the channels of each, where the depthwise layer
 * after it reads (and writes) whole rows: half of each tensor crossed between the workers'
 * caches at every handoff of an inverted-residual block (across the host's two L3s, ~0.1 ms
 * a layer on MobileNetV2, bench/cpu/parallel-profile.md). By rows, a worker reads what it
 * wrote but for a depthwise layer's halo rows, and reads every weight (from its own L2/L3).
 * With a second operand x2 (NULL: none): g is a 1x1 of unit stride and no padding, one
 * group; x2: (N, H2, W2, C2) with g2 its 1x1 (g2->c = C2, g2->in = (H2, W2), g2->s its
 * strides, g2->out = g->out); wp: the packed (C + C2, M) of both weights, rows of w then of
 * w2, so that y = act(conv(x, w) + conv(x2, w2) + b + r) is one reduction of C + C2 (a
 * bottleneck's conv3 and its downsample: the downsample's output is never stored). The
 * split is g's: the tasks, and so the bits, are the one-operand form's. */
RT_API void rt_pconv2_nhwc_par_f32(const float *x, const float *x2, const float *wp,
                                   const float *b, const float *r, float *y,
                                   const RtConvGeom *g, const RtConvGeom *g2,
                                   const RtAct *act, const RtPar *par) {
    const int64_t P = g->out[1] * g->out[2], ng = g->n * g->group;
    const int64_t np = (g->m / g->group + RT_PGEMM_NR - 1) / RT_PGEMM_NR;
    const int64_t mc = rt_pgemm_mc(P), units_p = (P + mc - 1) / mc;
    const int64_t units_j = (np + RT_PGEMM_NP - 1) / RT_PGEMM_NP;
    RtPconvTask k;
    int64_t n_pc = rt_par_chunks(par, units_p, ng), n_jc;
    n_jc = rt_par_chunks(par, units_j, ng * n_pc);
    k.x = x;
    k.wp = wp;
    k.b = b;
    k.r = r;
    k.y = y;
    k.g = g;
    k.act = act;
    k.mc = mc;
    k.pc = (units_p + n_pc - 1) / n_pc * mc;
    k.n_pc = (P + k.pc - 1) / k.pc;
    k.jc = (units_j + n_jc - 1) / n_jc * RT_PGEMM_NP;
    k.n_jc = (np + k.jc - 1) / k.jc;
    k.n_rows = 0;
    k.by_pixels = 0;
    k.x2 = x2;
    k.g2 = g2;
    k.par = par;
    if (P == 0 || np == 0) return;
    if (RT_PCONV_ROW_SPLIT && ng == 1 && rt_par_chunks(par, P, 1) > 1 &&
        g->out[1] >= 2 * (int64_t)par->workers &&
        (units_p >= rt_par_chunks(par, P, 1) ||
         g->k[1] * g->k[2] * g->c * g->m <=
             RT_PCONV_ROW_WEIGHTS * (g->in[1] * g->in[2] * g->c + P * g->m))) {
        k.n_rows = rt_par_chunks(par, g->out[1], 1);
        /* Fewer rows than the tasks wanted, that the workers cannot share evenly (7x7 at two
         * workers: 7 tasks of a row, dealt 3 + 4, whose ends rounded to 14-pixel tiles made
         * 28 + 21 pixels): one even run of pixels a worker (24 + 25), so that no worker waits
         * for the other's extra row */
        k.by_pixels = k.n_rows < rt_par_chunks(par, P, 1) && g->out[1] % par->workers != 0;
        if (k.by_pixels) k.n_rows = par->workers;
        rt_par_run(par, k.n_rows, rt_pconv_nhwc_rows_task_f32, &k);
        return;
    }
    rt_par_run(par, ng * k.n_pc * k.n_jc, rt_pconv_nhwc_task_f32, &k);
}

RT_API void rt_pconv_nhwc_par_f32(const float *x, const float *wp, const float *b,
                                  const float *r, float *y, const RtConvGeom *g,
                                  const RtAct *act, const RtPar *par) {
    rt_pconv2_nhwc_par_f32(x, (const float *)0, wp, b, r, y, g, (const RtConvGeom *)0, act, par);
}

RT_API void rt_pconv_nhwc_f32(const float *x, const float *wp, const float *b, const float *r,
                              float *y, const RtConvGeom *g, const RtAct *act) {
    rt_pconv_nhwc_par_f32(x, wp, b, r, y, g, act, (const RtPar *)0);
}

/* The two-operand 1x1 alone (serial): y = act(conv(x, w[0..C)) + conv(x2, w[C..C+C2)) + b
 * + r) (the block's first bottleneck: conv3 and its downsample as one reduction) */
RT_API void rt_pconv2_nhwc_f32(const float *x, const float *x2, const float *wp, const float *b,
                               const float *r, float *y, const RtConvGeom *g,
                               const RtConvGeom *g2, const RtAct *act) {
    rt_pconv2_nhwc_par_f32(x, x2, wp, b, r, y, g, g2, act, (const RtPar *)0);
}

#endif
