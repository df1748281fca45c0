/* rt_wino.h: Winograd F(4x4, 3x3) for channels-last 3x3 convolutions of stride 1, dilation
 * 1, group 1 (any pads): each 4x4 block of output pixels (a tile) comes from its 6x6 input
 * patch d as Y = AT [ (G g GT) . (BT d B) ] A, so the 36 products over the input channels
 * replace 144 multiply-accumulates a pixel and channel pair by 36 (4x fewer; the transforms
 * cost O(C + M) a tile, not O(C x M)).
 *
 * Transformed weights (backend/plan.c, plan_pack_weights_f32, computed in double at compile
 * time): U = G g GT per (c, m), stored for the GEMM microkernel of rt_pgemm.h as one packed
 * matrix per point p = 6*i + j of the 6x6 transform, panels of 16 output channels:
 *     u[((p*NP + q)*C + c)*16 + j] = U[i][j] of w[.][.][c][q*16 + j]   (0 past M)
 * dims (6, 6, NP, C, 16). The points are 0, +-1, +-2 and infinity (Lavin and Gray's).
 *
 * Per block of tiles: the input transform writes V (36 x tiles x C) into a buffer (the
 * worker's scratch in the arena where the bundle gives one, rt_wino_ws_floats, else the stack);
 * for every panel of output channels, the 36 products (tiles x C) @ (C x 16) run on the
 * microkernel of rt_pgemm.h into a second buffer (where the path has short tiles, in even
 * calls of the block's own rows: rt_pgemm_tile_pf_f32; else whole RT_PGEMM_MR-row tiles,
 * rt_pgemm_tile_f32; with AVX-512 a block of exactly 16 tiles, a 14x14 image's, on this
 * file's 16-row tile rt_wino_p16_avx512 with V transposed), then the output transform adds
 * the bias and residual, applies the activation and stores the tile's pixels (inside the
 * image).
 * Tiles are numbered over batch x tile rows x tile columns; rt_wino_nhwc_tiles_f32 runs any
 * range of them, independent of the others (a parallel-for splits the ranges, or, for a
 * layer of heavy weights and few tiles, the output channel panels).
 * Stack: RT_WINO_VBUF (without a workspace) + 36 x RT_WINO_TBR x RT_PGEMM_NT floats (AVX2:
 * 108 + 41 KiB, AVX-512: 108 + 63 KiB).
 * Floor: 36 x C x M FMAs a tile of 16 pixels (against 144 x C x M direct).
 *
 * F(2x2, 3x3) (rt_wino2_*, the same kernel with wm = 2: rt_wino_x_*): 2x2 pixels a tile
 * from a 4x4 patch, 16 points (0, +-1, infinity), U (4, 4, NP, C, 16); for layers whose
 * F(4x4) weights would stream too many bytes (ResNet-50's 512@7x7: 16 x C x M = 16.8 MB
 * against F(4x4)'s 37.7 and the direct 9.4; 16 tiles of 2x2 are one block on
 * rt_wino_p16_avx512): 16 x C x M FMAs a tile of 4 pixels (0.58x the direct at 7x7). C99. */
#ifndef KILN_RT_WINO_H
#define KILN_RT_WINO_H

#include "rt_act.h"
#include "rt_common.h"
#include "rt_conv.h"
#include "rt_pgemm.h"

#define RT_WINO_M 4      /* output pixels a tile side */
#define RT_WINO_A 6      /* input pixels a tile side: m + 3 - 1 */
#define RT_WINO_P 36     /* points of the transform */
#define RT_WINO_L 8      /* channels a transform step (one ymm, two q registers) */
#define RT_WINO_VBUF 27648 /* floats of transformed input on the stack (108 KiB): 12 tiles of
                            * 64 channels, 6 of 128 (the blocks the rule's channels use) */
/* tiles a block: several microkernel tiles where the MR is small */
#define RT_WINO_TB_MAX (RT_PGEMM_MR >= 12 ? RT_PGEMM_MR : 3 * RT_PGEMM_MR)
#define RT_WINO_TBR ((RT_WINO_TB_MAX + RT_PGEMM_MR - 1) / RT_PGEMM_MR * RT_PGEMM_MR)
/* Tiles a block in a workspace on one worker: two microkernel heights where the MR is
 * big, so that a 14x14 image (16 tiles) is one block and its transformed weights (9.4 MB at
 * 256 channels) stream once, not twice (inside ResNet-50: 256@14x14 1.74-1.98 ms a layer
 * against 1.78-2.52 with 14-tile blocks). Several workers keep RT_WINO_TB_MAX: blocks are
 * their tasks. */
#define RT_WINO_TB_BIG (RT_PGEMM_MR >= 12 ? 2 * RT_PGEMM_MR : RT_WINO_TB_MAX)
/* The largest RT_WINO_TB_BIG of any path (AVX-512 28, AVX2 and NEON 18, portable 12), and
 * the widest tile of output channels (RT_PGEMM_NT: AVX-512 32), so that the workspace the
 * compiler sizes (it does not know which path the bundle builds) holds a whole block of
 * every path at any C. On the stack, RT_WINO_VBUF holds 6 tiles of 128 channels: 6 of
 * AVX-512's 14 microkernel rows, the other 8 computed for nothing (bench/kernels/wino.c:
 * 128 -> 128 @28x28 at 0.75x the packed GEMM's time with 6 tiles a block, 0.48x with 14). */
#define RT_WINO_TB_WS 28
#define RT_WINO_NT_WS 32

/* v = BT d B over L lanes (d, v: 6 x 6 points of L channels). */
RT_API void rt_wino_in_f32(float v[6][6][RT_WINO_L], float d[6][6][RT_WINO_L]) {
    float t[6][6][RT_WINO_L];
    int i, l;
    for (i = 0; i < 6; i++) /* t = BT d: column i */
        for (l = 0; l < RT_WINO_L; l++) {
            const float d0 = d[0][i][l], d1 = d[1][i][l], d2 = d[2][i][l];
            const float d3 = d[3][i][l], d4 = d[4][i][l], d5 = d[5][i][l];
            t[0][i][l] = 4.0f * d0 - 5.0f * d2 + d4;
            t[1][i][l] = -4.0f * (d1 + d2) + d3 + d4;
            t[2][i][l] = 4.0f * (d1 - d2) - d3 + d4;
            t[3][i][l] = 2.0f * (d3 - d1) - d2 + d4;
            t[4][i][l] = 2.0f * (d1 - d3) - d2 + d4;
            t[5][i][l] = 4.0f * d1 - 5.0f * d3 + d5;
        }
    for (i = 0; i < 6; i++) /* v = t B: row i */
        for (l = 0; l < RT_WINO_L; l++) {
            const float d0 = t[i][0][l], d1 = t[i][1][l], d2 = t[i][2][l];
            const float d3 = t[i][3][l], d4 = t[i][4][l], d5 = t[i][5][l];
            v[i][0][l] = 4.0f * d0 - 5.0f * d2 + d4;
            v[i][1][l] = -4.0f * (d1 + d2) + d3 + d4;
            v[i][2][l] = 4.0f * (d1 - d2) - d3 + d4;
            v[i][3][l] = 2.0f * (d3 - d1) - d2 + d4;
            v[i][4][l] = 2.0f * (d1 - d3) - d2 + d4;
            v[i][5][l] = 4.0f * d1 - 5.0f * d3 + d5;
        }
}

/* o = AT m A over L lanes (m: 6 x 6 points, o: 4 x 4 pixels). */
RT_API void rt_wino_out_f32(float o[4][4][RT_WINO_L], float m[6][6][RT_WINO_L]) {
    float t[4][6][RT_WINO_L];
    int i, l;
    for (i = 0; i < 6; i++) /* t = AT m: column i */
        for (l = 0; l < RT_WINO_L; l++) {
            const float m0 = m[0][i][l], m1 = m[1][i][l], m2 = m[2][i][l];
            const float m3 = m[3][i][l], m4 = m[4][i][l], m5 = m[5][i][l];
            const float s12 = m1 + m2, d12 = m1 - m2, s34 = m3 + m4, d34 = m3 - m4;
            t[0][i][l] = m0 + s12 + s34;
            t[1][i][l] = d12 + 2.0f * d34;
            t[2][i][l] = s12 + 4.0f * s34;
            t[3][i][l] = d12 + 8.0f * d34 + m5;
        }
    for (i = 0; i < 4; i++) /* o = t A: row i */
        for (l = 0; l < RT_WINO_L; l++) {
            const float m0 = t[i][0][l], m1 = t[i][1][l], m2 = t[i][2][l];
            const float m3 = t[i][3][l], m4 = t[i][4][l], m5 = t[i][5][l];
            const float s12 = m1 + m2, d12 = m1 - m2, s34 = m3 + m4, d34 = m3 - m4;
            o[i][0][l] = m0 + s12 + s34;
            o[i][1][l] = d12 + 2.0f * d34;
            o[i][2][l] = s12 + 4.0f * s34;
            o[i][3][l] = d12 + 8.0f * d34 + m5;
        }
}

/* F(2x2, 3x3) (rt_wino2_*): v = BT d B over L lanes, d and v 4 x 4 points (BT: rows
 * (1 0 -1 0), (0 1 1 0), (0 -1 1 0), (0 1 0 -1); the points 0, +-1 and infinity). */
RT_API void rt_wino2_in_f32(float v[4][4][RT_WINO_L], float d[4][4][RT_WINO_L]) {
    float t[4][4][RT_WINO_L];
    int i, l;
    for (i = 0; i < 4; i++) /* t = BT d: column i */
        for (l = 0; l < RT_WINO_L; l++) {
            t[0][i][l] = d[0][i][l] - d[2][i][l];
            t[1][i][l] = d[1][i][l] + d[2][i][l];
            t[2][i][l] = d[2][i][l] - d[1][i][l];
            t[3][i][l] = d[1][i][l] - d[3][i][l];
        }
    for (i = 0; i < 4; i++) /* v = t B: row i */
        for (l = 0; l < RT_WINO_L; l++) {
            v[i][0][l] = t[i][0][l] - t[i][2][l];
            v[i][1][l] = t[i][1][l] + t[i][2][l];
            v[i][2][l] = t[i][2][l] - t[i][1][l];
            v[i][3][l] = t[i][1][l] - t[i][3][l];
        }
}

/* F(2x2, 3x3): o = AT m A over L lanes (m: 4 x 4 points, o: 2 x 2 pixels; AT: rows
 * (1 1 1 0), (0 1 -1 -1)). */
RT_API void rt_wino2_out_f32(float o[2][2][RT_WINO_L], float m[4][4][RT_WINO_L]) {
    float t[2][4][RT_WINO_L];
    int i, l;
    for (i = 0; i < 4; i++) /* t = AT m: column i */
        for (l = 0; l < RT_WINO_L; l++) {
            t[0][i][l] = m[0][i][l] + m[1][i][l] + m[2][i][l];
            t[1][i][l] = m[1][i][l] - m[2][i][l] - m[3][i][l];
        }
    for (i = 0; i < 2; i++) /* o = t A: row i */
        for (l = 0; l < RT_WINO_L; l++) {
            o[i][0][l] = t[i][0][l] + t[i][1][l] + t[i][2][l];
            o[i][1][l] = t[i][1][l] - t[i][2][l] - t[i][3][l];
        }
}

/* Stride 2 (rt_winos2_*): a 3x3 convolution of stride 2 as four stride-1 ones on the
 * phases of its input, P_ab[j][k] = x[2j + a - pt][2k + b - pl]: the 2x2 kernel (w00 w02;
 * w20 w22) on P_00, the 2x1 (w01; w21) on P_01, the 1x2 (w10 w12) on P_10 and w11 on P_11.
 * A tile of 2x2 output pixels reads a 5x5 input patch D (rows 4 th - pt.., columns 4 tw -
 * pl..); F(2, 2) (BT: rows (1 -1 0), (0 1 0), (0 -1 1); G: (1 0), (1 1), (0 1); AT: (1 1 0),
 * (0 1 1), exact in floats) runs along each dimension of two taps, so a tile has 25 points:
 * 9 of P_00 (3x3, each its own matrix), 6 of P_01 (3 along h x 2 columns; matrix 9 + i),
 * 6 of P_10 (2 rows x 3 along w; matrix 12 + j) and the 4 pixels of P_11 (matrix 15): 16
 * transformed matrices (16 x C x M, U (16, 1, NP, C, 16)) and 25 products a tile of 4
 * pixels, 6.25 a pixel against the direct 9 (0.69x). */
#define RT_WINOS2 (-2) /* rt_wino_x_*'s wm for stride 2 (tiles of 2x2 pixels) */
#define RT_WINOS2_P 25 /* points a tile */
/* The matrix of each point. */
static const unsigned char rt_winos2_mat[RT_WINOS2_P] = {0,  1,  2,  3,  4,  5,  6,  7,  8,
                                                         9,  9,  10, 10, 11, 11, 12, 13, 14,
                                                         12, 13, 14, 15, 15, 15, 15};

/* The 25 points of one tile's channels c0..c0+cw (cw <= RT_WINO_L) from the image xn (H x W
 * pixels of C), the patch at (ih0, iw0); point p at dst + p * pstride. */
RT_API void rt_winos2_in_f32(const float *xn, int64_t H, int64_t W, int64_t C, int64_t c0,
                             int64_t cw, int64_t ih0, int64_t iw0, float *dst,
                             int64_t pstride) {
    float d[5][5];
    int64_t l;
    int a, e;
    for (l = 0; l < cw; l++) {
        float t[3][3], *o = dst + l;
        for (a = 0; a < 5; a++)
            for (e = 0; e < 5; e++) {
                const int64_t ih = ih0 + a, iw = iw0 + e;
                d[a][e] = ih >= 0 && ih < H && iw >= 0 && iw < W ? xn[(ih * W + iw) * C + c0 + l]
                                                                 : 0.0f;
            }
        for (e = 0; e < 3; e++) { /* P_00: BT along h (rows 0, 2, 4), then along w */
            t[0][e] = d[0][2 * e] - d[2][2 * e];
            t[1][e] = d[2][2 * e];
            t[2][e] = d[4][2 * e] - d[2][2 * e];
        }
        for (a = 0; a < 3; a++) {
            o[(3 * a + 0) * pstride] = t[a][0] - t[a][1];
            o[(3 * a + 1) * pstride] = t[a][1];
            o[(3 * a + 2) * pstride] = t[a][2] - t[a][1];
        }
        for (e = 0; e < 2; e++) { /* P_01: BT along h, columns 1, 3 */
            o[(9 + e) * pstride] = d[0][2 * e + 1] - d[2][2 * e + 1];
            o[(11 + e) * pstride] = d[2][2 * e + 1];
            o[(13 + e) * pstride] = d[4][2 * e + 1] - d[2][2 * e + 1];
        }
        for (a = 0; a < 2; a++) { /* P_10: rows 1, 3, BT along w */
            o[(15 + 3 * a) * pstride] = d[2 * a + 1][0] - d[2 * a + 1][2];
            o[(16 + 3 * a) * pstride] = d[2 * a + 1][2];
            o[(17 + 3 * a) * pstride] = d[2 * a + 1][4] - d[2 * a + 1][2];
        }
        for (a = 0; a < 2; a++) /* P_11 */
            for (e = 0; e < 2; e++) o[(21 + 2 * a + e) * pstride] = d[2 * a + 1][2 * e + 1];
    }
}

/* The 2x2 pixels of one tile's channels (cw <= RT_WINO_L) from its 25 products (point p at
 * src + p * pstride): o[a][e][l]. */
RT_API void rt_winos2_out_f32(float o[2][2][RT_WINO_L], const float *src, int64_t pstride,
                              int64_t cw) {
    int64_t l;
    int a, e;
    for (l = 0; l < cw; l++) {
        float m[25], t[2][3];
        for (a = 0; a < 25; a++) m[a] = src[a * pstride + l];
        for (e = 0; e < 3; e++) { /* P_00: AT along h */
            t[0][e] = m[e] + m[3 + e];
            t[1][e] = m[3 + e] + m[6 + e];
        }
        for (a = 0; a < 2; a++) {
            o[a][0][l] = t[a][0] + t[a][1] + m[15 + 3 * a] + m[16 + 3 * a] + m[21 + 2 * a];
            o[a][1][l] = t[a][1] + t[a][2] + m[16 + 3 * a] + m[17 + 3 * a] + m[22 + 2 * a];
            for (e = 0; e < 2; e++) /* P_01: AT along h */
                o[a][e][l] += a == 0 ? m[9 + e] + m[11 + e] : m[11 + e] + m[13 + e];
        }
    }
}

/* Floats of the workspace that holds a block of RT_WINO_TB_WS tiles of C channels (V) and
 * their products for one tile of output channels: 36 x RT_WINO_TB_WS x (C + RT_WINO_NT_WS). */
RT_API int64_t rt_wino_ws_floats(int64_t C) {
    return (int64_t)RT_WINO_P * RT_WINO_TB_WS * (C + RT_WINO_NT_WS);
}

/* Stride 2 (RT_WINOS2, below) holds up to 56 tiles a block, its 25 points each: a 28x28
 * input's 14x14 output (49 tiles) in one block, so that its 16 x C x M weights (4.2 MB at
 * 256 channels) stream once, not twice. */
#define RT_WINOS2_TB_WS 56
/* Blocks of an image that does not fit one: RT_WINO_TB_MAX tiles (AVX-512: 14), whose V
 * (25 x 14 x C floats, 179 KiB at 128 channels) stays in L2 beside the weights (1 MB at
 * 128 channels) that every block reads again (ResNet-50's 128@56->28, 10 alternating rounds
 * of profile.py: 1.88 ms against 2.01 with 28 tiles and 2.04 with 56). A -D to try others. */
#ifndef RT_WINOS2_BIG_CAP
#define RT_WINOS2_BIG_CAP RT_WINO_TB_MAX
#endif
/* Points a tile (wm as rt_wino_x_blocks_f32's). */
RT_API int64_t rt_wino_x_points(int wm) {
    return wm == RT_WINOS2 ? RT_WINOS2_P : (int64_t)(wm + 2) * (wm + 2);
}

/* Floats of V's part of the workspace (the products follow it) for tiles of wm (as
 * rt_wino_x_blocks_f32's), and of the whole workspace: blocks of RT_WINOS2_TB_WS tiles of 25
 * points at stride 2, else of RT_WINO_TB_WS tiles of F(2x2, 3x3)'s 16 points or F(4x4,
 * 3x3)'s 36 (a block's V and products are indexed by the tile's points alone). */
RT_API int64_t rt_wino_x_ws_v(int64_t C, int wm) {
    return wm == RT_WINOS2 ? 25 * RT_WINOS2_TB_WS * C
                           : rt_wino_x_points(wm) * RT_WINO_TB_WS * C;
}
RT_API int64_t rt_wino_x_ws_floats(int64_t C, int wm) {
    return rt_wino_x_ws_v(C + RT_WINO_NT_WS, wm);
}

#if defined(__GNUC__) && !defined(RT_NO_VECTOR_EXT) && !defined(__CUDACC__)
/* The transforms on whole vectors of channels with GCC/Clang vector extensions (the loops
 * above otherwise, and for the channels past the last whole vector): each of the 36 points
 * is read from the image or the products once, the intermediate t stays in registers as
 * far as they go, and V or the pixels are written once, where the loops copy every point
 * through d, t, v (m, t, o) on the stack and clamp lane by lane (bench/kernels/wino.c: the
 * transforms were 46% of the 64-channel layers' time, about 0.3 of it after). */
#define RT_WINO_VEC 1
#if defined(__AVX512F__)
#define RT_WINO_VL 16 /* channels a vector transform: one zmm */
#else
#define RT_WINO_VL 8 /* one ymm, two q registers */
#endif
typedef float rt_wino_vf __attribute__((vector_size(RT_WINO_VL * sizeof(float))));
typedef int32_t rt_wino_vi __attribute__((vector_size(RT_WINO_VL * sizeof(float))));
/* (Vectors go through memory at the functions' boundaries, never by value: without AVX a
 * 32-byte vector argument or result changes the ABI, and GCC warns.) */

/* The RT_WINO_VL channels of pixel (ih, iw) of xc (H x W pixels of C) into *d, 0 outside the
 * image (inside: the whole patch is, no test). */
RT_API void rt_wino_load_vec(rt_wino_vf *d, const float *xc, int64_t H, int64_t W, int64_t C,
                             int64_t ih, int64_t iw, int inside) {
    const rt_wino_vf z = {0};
    if (inside || (ih >= 0 && ih < H && iw >= 0 && iw < W))
        memcpy(d, xc + (ih * W + iw) * C, sizeof *d);
    else
        *d = z;
}

/* One output vector of a tile, *v (the transform's sum and the bias): plus the residual at rp
 * (when rp), clamped to [lo, hi] (NaN passes), stored at yp, then the activation on it. */
RT_API void rt_wino_store_vec(float *yp, const rt_wino_vf *v, const float *rp, float lo,
                              float hi, const RtAct *act) {
    const rt_wino_vf z = {0}, vlo = z + lo, vhi = z + hi;
    rt_wino_vf w = *v, rv;
    rt_wino_vi lt;
    if (rp) {
        memcpy(&rv, rp, sizeof rv);
        w += rv;
    }
    lt = w < vlo; /* w < lo ? lo : w, then w > hi ? hi : w */
    w = (rt_wino_vf)((lt & (rt_wino_vi)vlo) | (~lt & (rt_wino_vi)w));
    lt = w > vhi;
    w = (rt_wino_vf)((lt & (rt_wino_vi)vhi) | (~lt & (rt_wino_vi)w));
    memcpy(yp, &w, sizeof w);
    if (act) rt_act_row_f32(yp, NULL, RT_WINO_VL, act);
}

/* V = BT d B of one tile's RT_WINO_VL channels: d read from xc (the image at the block's
 * first channel, H x W pixels of C) at rows ih0.. and columns iw0.. (0 outside), point p
 * stored at dst + p * pstride. */
RT_API void rt_wino_in_vec_f32(const float *xc, int64_t H, int64_t W, int64_t C, int64_t ih0,
                               int64_t iw0, float *dst, int64_t pstride) {
    const int inside = ih0 >= 0 && ih0 + RT_WINO_A <= H && iw0 >= 0 && iw0 + RT_WINO_A <= W;
    rt_wino_vf t[6][6], d[6];
    int a, e;
    for (e = 0; e < 6; e++) { /* t = BT d: column e */
        for (a = 0; a < 6; a++)
            rt_wino_load_vec(&d[a], xc, H, W, C, ih0 + a, iw0 + e, inside);
        t[0][e] = 4.0f * d[0] - 5.0f * d[2] + d[4];
        t[1][e] = -4.0f * (d[1] + d[2]) + d[3] + d[4];
        t[2][e] = 4.0f * (d[1] - d[2]) - d[3] + d[4];
        t[3][e] = 2.0f * (d[3] - d[1]) - d[2] + d[4];
        t[4][e] = 2.0f * (d[1] - d[3]) - d[2] + d[4];
        t[5][e] = 4.0f * d[1] - 5.0f * d[3] + d[5];
    }
    for (a = 0; a < 6; a++) { /* v = t B: row a */
        const rt_wino_vf *q = t[a];
        float *o = dst + a * 6 * pstride;
        rt_wino_vf v[6];
        v[0] = 4.0f * q[0] - 5.0f * q[2] + q[4];
        v[1] = -4.0f * (q[1] + q[2]) + q[3] + q[4];
        v[2] = 4.0f * (q[1] - q[2]) - q[3] + q[4];
        v[3] = 2.0f * (q[3] - q[1]) - q[2] + q[4];
        v[4] = 2.0f * (q[1] - q[3]) - q[2] + q[4];
        v[5] = 4.0f * q[1] - 5.0f * q[3] + q[5];
        for (e = 0; e < 6; e++) memcpy(o + e * pstride, &v[e], sizeof v[e]);
    }
}

/* Y = AT m A of one tile's RT_WINO_VL output channels, point p of m at src + p * pstride,
 * then the epilogue: + bias (NULL: none) + the residual r0 (NULL: none), clamped to
 * [lo, hi] (NaN passes), act applied where it is no clamp (NULL: none), stored to the
 * rows x cols pixels inside the image, pixel (a, e) at y0 + a * yrow + e * ycol. */
RT_API void rt_wino_out_vec_f32(const float *src, int64_t pstride, const float *bias, float *y0,
                                const float *r0, int64_t yrow, int64_t ycol, int rows, int cols,
                                float lo, float hi, const RtAct *act) {
    const rt_wino_vf z = {0};
    rt_wino_vf t[4][6], o[4], m[6], bv = z;
    int a, e;
    if (bias) memcpy(&bv, bias, sizeof bv);
    for (e = 0; e < 6; e++) { /* t = AT m: column e */
        rt_wino_vf s12, d12, s34, d34;
        for (a = 0; a < 6; a++) memcpy(&m[a], src + (6 * a + e) * pstride, sizeof m[a]);
        s12 = m[1] + m[2];
        d12 = m[1] - m[2];
        s34 = m[3] + m[4];
        d34 = m[3] - m[4];
        t[0][e] = m[0] + s12 + s34;
        t[1][e] = d12 + 2.0f * d34;
        t[2][e] = s12 + 4.0f * s34;
        t[3][e] = d12 + 8.0f * d34 + m[5];
    }
    for (a = 0; a < rows; a++) { /* o = t A: row a */
        const rt_wino_vf *q = t[a];
        const rt_wino_vf s12 = q[1] + q[2], d12 = q[1] - q[2], s34 = q[3] + q[4];
        const rt_wino_vf d34 = q[3] - q[4];
        o[0] = q[0] + s12 + s34;
        o[1] = d12 + 2.0f * d34;
        o[2] = s12 + 4.0f * s34;
        o[3] = d12 + 8.0f * d34 + q[5];
        for (e = 0; e < cols; e++) {
            const int64_t off = a * yrow + e * ycol;
            const rt_wino_vf v = o[e] + bv;
            rt_wino_store_vec(y0 + off, &v, r0 ? r0 + off : NULL, lo, hi, act);
        }
    }
}
/* rt_wino_in_vec_f32 for F(2x2, 3x3): a 4x4 patch, 16 points. */
RT_API void rt_wino2_in_vec_f32(const float *xc, int64_t H, int64_t W, int64_t C, int64_t ih0,
                                int64_t iw0, float *dst, int64_t pstride) {
    const int inside = ih0 >= 0 && ih0 + 4 <= H && iw0 >= 0 && iw0 + 4 <= W;
    rt_wino_vf t[4][4], d[4];
    int a, e;
    for (e = 0; e < 4; e++) { /* t = BT d: column e */
        for (a = 0; a < 4; a++)
            rt_wino_load_vec(&d[a], xc, H, W, C, ih0 + a, iw0 + e, inside);
        t[0][e] = d[0] - d[2];
        t[1][e] = d[1] + d[2];
        t[2][e] = d[2] - d[1];
        t[3][e] = d[1] - d[3];
    }
    for (a = 0; a < 4; a++) { /* v = t B: row a */
        const rt_wino_vf *q = t[a];
        float *o = dst + a * 4 * pstride;
        rt_wino_vf v[4];
        v[0] = q[0] - q[2];
        v[1] = q[1] + q[2];
        v[2] = q[2] - q[1];
        v[3] = q[1] - q[3];
        for (e = 0; e < 4; e++) memcpy(o + e * pstride, &v[e], sizeof v[e]);
    }
}

/* rt_wino_out_vec_f32 for F(2x2, 3x3): 16 points, a 2x2 tile (rows, cols <= 2). */
RT_API void rt_wino2_out_vec_f32(const float *src, int64_t pstride, const float *bias, float *y0,
                                 const float *r0, int64_t yrow, int64_t ycol, int rows,
                                 int cols, float lo, float hi, const RtAct *act) {
    const rt_wino_vf z = {0};
    rt_wino_vf t[2][4], o[2], m[4], bv = z;
    int a, e;
    if (bias) memcpy(&bv, bias, sizeof bv);
    for (e = 0; e < 4; e++) { /* t = AT m: column e */
        for (a = 0; a < 4; a++) memcpy(&m[a], src + (4 * a + e) * pstride, sizeof m[a]);
        t[0][e] = m[0] + m[1] + m[2];
        t[1][e] = m[1] - m[2] - m[3];
    }
    for (a = 0; a < rows; a++) { /* o = t A: row a */
        const rt_wino_vf *q = t[a];
        o[0] = q[0] + q[1] + q[2];
        o[1] = q[1] - q[2] - q[3];
        for (e = 0; e < cols; e++) {
            const int64_t off = a * yrow + e * ycol;
            const rt_wino_vf v = o[e] + bv;
            rt_wino_store_vec(y0 + off, &v, r0 ? r0 + off : NULL, lo, hi, act);
        }
    }
}
/* rt_winos2_in_f32 on RT_WINO_VL channels (xc: the image at the first). */
RT_API void rt_winos2_in_vec_f32(const float *xc, int64_t H, int64_t W, int64_t C, int64_t ih0,
                                 int64_t iw0, float *dst, int64_t pstride) {
    const int inside = ih0 >= 0 && ih0 + 5 <= H && iw0 >= 0 && iw0 + 5 <= W;
    rt_wino_vf d[5][5], t[3][3], v[RT_WINOS2_P];
    int a, e;
    for (a = 0; a < 5; a++)
        for (e = 0; e < 5; e++)
            rt_wino_load_vec(&d[a][e], xc, H, W, C, ih0 + a, iw0 + e, inside);
    for (e = 0; e < 3; e++) {
        t[0][e] = d[0][2 * e] - d[2][2 * e];
        t[1][e] = d[2][2 * e];
        t[2][e] = d[4][2 * e] - d[2][2 * e];
    }
    for (a = 0; a < 3; a++) {
        v[3 * a] = t[a][0] - t[a][1];
        v[3 * a + 1] = t[a][1];
        v[3 * a + 2] = t[a][2] - t[a][1];
    }
    for (e = 0; e < 2; e++) {
        v[9 + e] = d[0][2 * e + 1] - d[2][2 * e + 1];
        v[11 + e] = d[2][2 * e + 1];
        v[13 + e] = d[4][2 * e + 1] - d[2][2 * e + 1];
    }
    for (a = 0; a < 2; a++) {
        v[15 + 3 * a] = d[2 * a + 1][0] - d[2 * a + 1][2];
        v[16 + 3 * a] = d[2 * a + 1][2];
        v[17 + 3 * a] = d[2 * a + 1][4] - d[2 * a + 1][2];
    }
    for (a = 0; a < 2; a++)
        for (e = 0; e < 2; e++) v[21 + 2 * a + e] = d[2 * a + 1][2 * e + 1];
    for (a = 0; a < RT_WINOS2_P; a++) memcpy(dst + a * pstride, &v[a], sizeof v[a]);
}

/* rt_wino_out_vec_f32 for stride 2: 25 points, a 2x2 tile (rows, cols <= 2). */
RT_API void rt_winos2_out_vec_f32(const float *src, int64_t pstride, const float *bias,
                                  float *y0, const float *r0, int64_t yrow, int64_t ycol,
                                  int rows, int cols, float lo, float hi, const RtAct *act) {
    const rt_wino_vf z = {0};
    rt_wino_vf m[RT_WINOS2_P], t[2][3], o[2][2], bv = z;
    int a, e;
    if (bias) memcpy(&bv, bias, sizeof bv);
    for (a = 0; a < RT_WINOS2_P; a++) memcpy(&m[a], src + a * pstride, sizeof m[a]);
    for (e = 0; e < 3; e++) {
        t[0][e] = m[e] + m[3 + e];
        t[1][e] = m[3 + e] + m[6 + e];
    }
    for (a = 0; a < 2; a++) {
        o[a][0] = t[a][0] + t[a][1] + m[15 + 3 * a] + m[16 + 3 * a] + m[21 + 2 * a];
        o[a][1] = t[a][1] + t[a][2] + m[16 + 3 * a] + m[17 + 3 * a] + m[22 + 2 * a];
        for (e = 0; e < 2; e++) o[a][e] += a == 0 ? m[9 + e] + m[11 + e] : m[11 + e] + m[13 + e];
    }
    for (a = 0; a < rows; a++)
        for (e = 0; e < cols; e++) {
            const int64_t off = a * yrow + e * ycol;
            const rt_wino_vf v = o[a][e] + bv;
            rt_wino_store_vec(y0 + off, &v, r0 ? r0 + off : NULL, lo, hi, act);
        }
}
#endif

#if defined(RT_PGEMM_AVX512) && defined(RT_WINO_VEC)
/* Tiles a block of the one-panel products tile below: a 14x14 image's 16 tiles (one block
 * in the workspace) in one call. */
#define RT_WINO_R16 16
/* c[r][0..16) = sum over k < C of a[k * 16 + r] * b[k * 16 + 0..16), r < 16 (rows
 * RT_PGEMM_NT floats apart): the products of one point for a block of 16 tiles against one
 * panel of 16 output channels, 16 zmm accumulators, V transposed (C x 16 tiles) so that a
 * step's 16 broadcasts read one line at fixed offsets from one pointer (with V's rows C
 * floats apart GCC kept 16 row pointers, half of them spilled to xmm registers and moved
 * back each step: products 1.0-1.2 ms a 256@14x14 layer against 0.65-0.7 with one pointer,
 * Zen 4). Why not rt_pgemm.h's tile: its 14 rows x 2 panels ran a 16-tile block as two calls
 * of 8 rows, each step of the first reading two weight lines (128 B) for 16 FMAs, ~29 GB/s
 * at 3.6 GHz, more than one core streams from memory, and the second call (weights in L2)
 * did not overlap the stream; here a weight line (64 B) feeds 16 FMAs. Every step also
 * prefetches line k of pf (the next call's panel; NULL: none): without it the 9.4 MB of a
 * 256-channel layer's weights (the next point's panel 8 pages away) took 1.3-1.6 ms of
 * products, with it 0.7 (lab, weights flushed). Each row's sum is one FMA a step from 0,
 * as rt_pgemm.h's rows: the same bits. */
static inline void rt_wino_p16_avx512(int64_t C, const float *a, const float *b, float *c,
                                      const float *pf) {
#define RT_WINO_RS_(X)                                                                        \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#define RT_WINO_DECL_(r) __m512 c_##r = _mm512_setzero_ps();
    RT_WINO_RS_(RT_WINO_DECL_)
#undef RT_WINO_DECL_
    int64_t k;
    for (k = 0; k < C; k++) {
        const __m512 w = _mm512_loadu_ps(b + k * RT_PGEMM_NR);
        const float *ak = a + k * RT_WINO_R16;
        if (pf) RT_PGEMM_PREFETCH(pf + k * RT_PGEMM_NR);
#define RT_WINO_FMA_(r) c_##r = _mm512_fmadd_ps(_mm512_set1_ps(ak[r]), w, c_##r);
        RT_WINO_RS_(RT_WINO_FMA_)
#undef RT_WINO_FMA_
    }
#define RT_WINO_ST_(r) _mm512_storeu_ps(c + r * RT_PGEMM_NT, c_##r);
    RT_WINO_RS_(RT_WINO_ST_)
#undef RT_WINO_ST_
#undef RT_WINO_RS_
}
#endif

/* Tiles a block for C input channels in a buffer of buf floats, wp points a tile: as many
 * as it holds, whole microkernel tiles where there is room for one, at most cap. */
RT_API int64_t rt_wino_x_block_in(int64_t C, int64_t buf, int64_t cap, int64_t wp) {
    int64_t tb = buf / (wp * C);
    if (tb > cap) tb = cap;
    if (tb > RT_PGEMM_MR) tb -= tb % RT_PGEMM_MR;
    return tb < 1 ? 1 : tb;
}

/* rt_wino_x_block_in of F(4x4, 3x3)'s 36 points. */
RT_API int64_t rt_wino_block_in(int64_t C, int64_t buf, int64_t cap) {
    return rt_wino_x_block_in(C, buf, cap, RT_WINO_P);
}

/* Tiles a block in a workspace (rt_wino_ws_floats): RT_WINO_TB_BIG (big), else
 * RT_WINO_TB_MAX. */
RT_API int64_t rt_wino_block_ws(int64_t C, int big) {
    return rt_wino_block_in(C, (int64_t)RT_WINO_P * RT_WINO_TB_WS * C,
                            big ? RT_WINO_TB_BIG : RT_WINO_TB_MAX);
}

/* Tiles a block in a workspace on one worker: big blocks above RT_WINO_ONE_SMALL_C input
 * channels (a 14x14 image's 16 tiles in one), else RT_WINO_TB_MAX. At 64 and 128 channels
 * (ResNet-50's 64@56x56 and 128@28x28) the block's V and products (36 x 14 x (C + 32)
 * floats: 189 KiB at 64 channels, 322 KiB at 128; twice that at 28 tiles) leave L2 to the
 * weights' panels: 64@56x56 0.82 / 0.84 / 0.78 ms a layer against 0.85 / 0.86 / 0.81 with
 * 28 tiles (14 alternating rounds of profile.py; a second run of 10 alike), 128@28x28
 * 2.80 and 3.05 ms for the three against 2.98 and 3.29 (two runs of 10 and 12 rounds),
 * though its 2.4 MB of weights then stream four times instead of twice. */
#define RT_WINO_ONE_SMALL_C 128
RT_API int64_t rt_wino_block_one(int64_t C) {
    return rt_wino_block_ws(C, C > RT_WINO_ONE_SMALL_C);
}

/* Tiles of the whole batch for tiles of wm x wm pixels: N x ceil(OH/wm) x ceil(OW/wm). */
RT_API int64_t rt_wino_x_tiles(const RtConvGeom *g, int wm) {
    if (wm == RT_WINOS2) wm = 2;
    return g->n * ((g->out[1] + wm - 1) / wm) * ((g->out[2] + wm - 1) / wm);
}

/* F(4x4, 3x3)'s tiles: N x ceil(OH/4) x ceil(OW/4). */
RT_API int64_t rt_wino_tiles(const RtConvGeom *g) {
    return rt_wino_x_tiles(g, RT_WINO_M);
}

/* F(2x2, 3x3)'s tiles: N x ceil(OH/2) x ceil(OW/2). */
RT_API int64_t rt_wino2_tiles(const RtConvGeom *g) {
    return rt_wino_x_tiles(g, 2);
}

/* Stride 2's tiles (2x2 output pixels): N x ceil(OH/2) x ceil(OW/2). */
RT_API int64_t rt_winos2_tiles(const RtConvGeom *g) {
    return rt_wino_x_tiles(g, RT_WINOS2);
}


/* Tiles [t_begin, t_end) of y = act(conv(x, w) + b + r) in blocks of tb tiles, V in vb
 * (36 x tb x C floats), the products in mb (36 x mr x RT_PGEMM_NT, mr >= tb rounded up to
 * RT_PGEMM_MR), output channel panels [j_lo, j_hi) (j_lo a multiple of RT_PGEMM_NP; j_hi
 * past the last: all): the kernel of rt_wino_nhwc_tiles_f32 and rt_wino_nhwc_tiles_ws_f32.
 * Every tile's bytes are the same whatever tb (a microkernel row does not see the others)
 * and whatever the panels (each panel's products and outputs are its own). */
RT_API void rt_wino_x_blocks_f32(const float *x, const float *u, const float *b,
                                 const float *r, float *y, const RtConvGeom *g,
                                 const RtAct *act, int64_t t_begin, int64_t t_end, float *vb,
                                 int64_t tb, float *mb, int64_t mr, int64_t j_lo, int64_t j_hi,
                                 int wm) {
    /* wm: the tile's side, 4 (F(4x4, 3x3): 6x6 points) or 2 (F(2x2, 3x3): 4x4 points); or
     * RT_WINOS2: stride 2, tiles of 2x2 pixels, 25 points of 16 matrices */
    const int s2 = wm == RT_WINOS2, WM = s2 ? 2 : wm, WA = WM + 2;
    const int WP = s2 ? RT_WINOS2_P : WA * WA, SS = s2 ? 2 : 1; /* SS: the stride */
    const int64_t C = g->c, M = g->m, H = g->in[1], W = g->in[2], OH = g->out[1];
    const int64_t OW = g->out[2], TW = (OW + WM - 1) / WM;
    const int64_t TT = (OH + WM - 1) / WM * TW;
    const int64_t np = (M + RT_PGEMM_NR - 1) / RT_PGEMM_NR;
    const int act_clamps = !act || act->kind == RT_ACT_NONE || act->kind == RT_ACT_RELU ||
                           act->kind == RT_ACT_CLIP;
    const float lo = act && act->kind == RT_ACT_RELU   ? 0.0f
                     : act && act->kind == RT_ACT_CLIP ? (float)act->alpha
                                                       : -INFINITY;
    const float hi = act && act->kind == RT_ACT_CLIP ? (float)act->beta : INFINITY;
    int64_t t0;
    for (t0 = t_begin; t0 < t_end; t0 += tb) {
        const int64_t nb = t_end - t0 < tb ? t_end - t0 : tb;
#if RT_PGEMM_SHORT
        /* rows a microkernel call: the block's tiles in even calls of at most RT_PGEMM_MR
         * rows, each costing its rows alone (a 14x14 image's 16 tiles: 8 + 8 rows, where
         * full tiles spent 28 rows' FMAs on them) */
        const int64_t rh = (nb + (nb + RT_PGEMM_MR - 1) / RT_PGEMM_MR - 1) /
                           ((nb + RT_PGEMM_MR - 1) / RT_PGEMM_MR);
#else
        const int64_t rh = RT_PGEMM_MR; /* full tiles: rows past the block are computed too */
#endif
        int64_t i, j0;
#if defined(RT_WINO_R16)
        /* 16 tiles of whole vectors of channels: V transposed, V[p][c][i], for
         * rt_wino_p16_avx512 (mb, free until the products, holds each vector of channels'
         * 36 x 16 x 16 transformed values on the way) */
        const int t16 = !s2 && nb == RT_WINO_R16 && C % RT_WINO_VL == 0 && mr >= RT_WINO_R16;
        if (t16) {
            int64_t c0;
            for (c0 = 0; c0 < C; c0 += RT_WINO_VL) {
                int p, q;
                for (i = 0; i < RT_WINO_R16; i++) {
                    const int64_t tile = t0 + i, n = tile / TT, th = tile % TT / TW;
                    const int64_t tw = tile % TW;
                    (WM == 2 ? rt_wino2_in_vec_f32 : rt_wino_in_vec_f32)(
                        x + n * H * W * C + c0, H, W, C, th * WM - g->pad[1], tw * WM - g->pad[2],
                        mb + i * RT_WINO_VL, RT_WINO_R16 * RT_WINO_VL);
                }
                for (p = 0; p < WP; p++) {
                    const float *src = mb + p * RT_WINO_R16 * RT_WINO_VL;
                    float *dst = vb + ((int64_t)p * C + c0) * RT_WINO_R16;
                    for (q = 0; q < RT_WINO_VL; q++)
                        for (i = 0; i < RT_WINO_R16; i++)
                            dst[q * RT_WINO_R16 + i] = src[i * RT_WINO_VL + q];
                }
            }
        } else
#endif
        for (i = 0; i < nb; i++) { /* input transform: V[p][i][c] */
            const int64_t tile = t0 + i, n = tile / TT, th = tile % TT / TW, tw = tile % TW;
            const int64_t ih0 = th * WM * SS - g->pad[1], iw0 = tw * WM * SS - g->pad[2];
            const float *xn = x + n * H * W * C;
            int64_t c0 = 0;
#ifdef RT_WINO_VEC
            for (; c0 + RT_WINO_VL <= C; c0 += RT_WINO_VL)
                (s2 ? rt_winos2_in_vec_f32 : WM == 2 ? rt_wino2_in_vec_f32 : rt_wino_in_vec_f32)(
                    xn + c0, H, W, C, ih0, iw0, vb + i * C + c0, tb * C);
#endif
            if (s2)
                for (; c0 < C; c0 += RT_WINO_L)
                    rt_winos2_in_f32(xn, H, W, C, c0, C - c0 < RT_WINO_L ? C - c0 : RT_WINO_L,
                                     ih0, iw0, vb + i * C + c0, tb * C);
            for (; c0 < C; c0 += RT_WINO_L) {
                const int64_t cw = C - c0 < RT_WINO_L ? C - c0 : RT_WINO_L;
                float d[6][6][RT_WINO_L], v[6][6][RT_WINO_L];
                float d2[4][4][RT_WINO_L], v2[4][4][RT_WINO_L]; /* F(2x2, 3x3) */
                int a, e, l;
                for (a = 0; a < WA; a++)
                    for (e = 0; e < WA; e++) {
                        const int64_t ih = ih0 + a, iw = iw0 + e;
                        const int inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
                        const float *src = inside ? xn + (ih * W + iw) * C + c0 : xn;
                        float *dd = WM == 2 ? d2[a][e] : d[a][e];
                        if (!inside) {
                            for (l = 0; l < RT_WINO_L; l++) dd[l] = 0.0f;
                        } else if (cw == RT_WINO_L) { /* fixed length: one vector move */
                            for (l = 0; l < RT_WINO_L; l++) dd[l] = src[l];
                        } else {
                            for (l = 0; l < RT_WINO_L; l++) dd[l] = 0.0f;
                            for (l = 0; l < cw; l++) dd[l] = src[l];
                        }
                    }
                if (WM == 2)
                    rt_wino2_in_f32(v2, d2);
                else
                    rt_wino_in_f32(v, d);
                for (a = 0; a < WP; a++) {
                    float *dst = vb + (a * tb + i) * C + c0;
                    const float *vv = WM == 2 ? v2[a / 4][a % 4] : v[a / 6][a % 6];
                    if (cw == RT_WINO_L)
                        for (l = 0; l < RT_WINO_L; l++) dst[l] = vv[l];
                    else
                        for (l = 0; l < cw; l++) dst[l] = vv[l];
                }
            }
        }
        if (j_hi > np) j_hi = np;
        for (j0 = j_lo; j0 < j_hi; j0 += RT_PGEMM_NP) {
            const int64_t m0 = j0 * RT_PGEMM_NR;
            const int64_t cols = M - m0 < RT_PGEMM_NT ? M - m0 : RT_PGEMM_NT;
            /* a missing second panel repeats the first: its columns are dropped */
            const int64_t b_panel = j0 + 1 < np ? C * RT_PGEMM_NR : 0;
            int64_t p, r0, cc;
#if defined(RT_WINO_R16)
            if (t16) {
                for (p = 0; p < WP; p++) {
                    const float *bp = u + (p * np + j0) * C * RT_PGEMM_NR;
                    /* the next call's panel: the next point's, after the last the next pair's */
                    const float *nx = p + 1 < WP   ? bp + np * C * RT_PGEMM_NR
                                      : j0 + RT_PGEMM_NP < j_hi ? u + (j0 + RT_PGEMM_NP) * C * RT_PGEMM_NR
                                                             : NULL;
                    const float *ap = vb + p * C * RT_WINO_R16;
                    float *cp = mb + p * mr * RT_PGEMM_NT;
                    rt_wino_p16_avx512(C, ap, bp, cp, b_panel ? bp + b_panel : nx);
                    if (b_panel) rt_wino_p16_avx512(C, ap, bp + b_panel, cp + RT_PGEMM_NR, nx);
                }
            } else
#endif
            for (p = 0; p < WP; p++) { /* the WP (36, 16 or 25) products of this panel */
                const float *bp = u + ((s2 ? rt_winos2_mat[p] : p) * np + j0) * C * RT_PGEMM_NR;
                for (r0 = 0; r0 < nb; r0 += rh) {
                    const float *a[RT_PGEMM_MR];
                    int q;
                    for (q = 0; q < RT_PGEMM_MR; q++) /* rows past the block: any valid row */
                        a[q] = vb + (p * tb + (r0 + q < nb ? r0 + q : r0)) * C;
#if RT_PGEMM_SHORT
                    rt_pgemm_tile_pf_f32(nb - r0 < rh ? (int)(nb - r0) : (int)rh,
                                         b_panel ? RT_PGEMM_NT : RT_PGEMM_NR, 1, C, a, bp, 0,
                                         b_panel, rt_pgemm_zero, 0,
                                         mb + (p * mr + r0) * RT_PGEMM_NT, RT_PGEMM_NT, NULL,
                                         -INFINITY, INFINITY, 0, (const float *)0, 0, 0);
#else
                    rt_pgemm_tile_f32(1, C, a, bp, 0, b_panel, rt_pgemm_zero, 0,
                                      mb + (p * mr + r0) * RT_PGEMM_NT, RT_PGEMM_NT,
                                      NULL, -INFINITY, INFINITY);
#endif
                }
            }
            for (i = 0; i < nb; i++) { /* output transform and epilogue */
                const int64_t tile = t0 + i, n = tile / TT, th = tile % TT / TW, tw = tile % TW;
                cc = 0;
#ifdef RT_WINO_VEC
                {
                    const int64_t oh0 = th * WM, ow0 = tw * WM;
                    const int rows = OH - oh0 < WM ? (int)(OH - oh0) : WM;
                    const int tcols = OW - ow0 < WM ? (int)(OW - ow0) : WM;
                    /* the output (and residual) pixels of the tile two ahead into L1, the
                     * first and last line of this panel's columns: the tile's 16 pixels are
                     * 4 runs OW x M floats apart that no hardware prefetcher follows, and
                     * the transform's stores and residual loads waited on them (ResNet-50's
                     * 64@56x56 layers 0.95x the time in-model, Zen 4) */
                    if (i + 2 < nb) {
                        const int64_t t2 = t0 + i + 2, n2 = t2 / TT, oh2 = t2 % TT / TW * WM;
                        const int64_t ow2 = t2 % TW * WM;
                        const int64_t rows2 = OH - oh2 < WM ? OH - oh2 : WM;
                        const int64_t cols2 = OW - ow2 < WM ? OW - ow2 : WM;
                        int64_t a2, e2;
                        for (a2 = 0; a2 < rows2; a2++)
                            for (e2 = 0; e2 < cols2; e2++) {
                                const int64_t at = ((n2 * OH + oh2 + a2) * OW + ow2 + e2) * M + m0;
                                RT_PGEMM_PREFETCH_W(y + at);
                                RT_PGEMM_PREFETCH_W(y + at + cols - 1);
                                if (r) {
                                    RT_PGEMM_PREFETCH(r + at);
                                    RT_PGEMM_PREFETCH(r + at + cols - 1);
                                }
                            }
                    }
                    for (; cc + RT_WINO_VL <= cols; cc += RT_WINO_VL) {
                        float *y0 = y + ((n * OH + oh0) * OW + ow0) * M + m0 + cc;
                        (s2          ? rt_winos2_out_vec_f32
                         : WM == 2 ? rt_wino2_out_vec_f32
                                   : rt_wino_out_vec_f32)(
                                            mb + i * RT_PGEMM_NT + cc, mr * RT_PGEMM_NT,
                                            b ? b + m0 + cc : NULL, y0, r ? r + (y0 - y) : NULL,
                                            OW * M, M, rows, tcols, lo, hi,
                                            act_clamps ? NULL : act);
                    }
                }
#endif
                for (; cc < cols; cc += RT_WINO_L) {
                    const int64_t cw = cols - cc < RT_WINO_L ? cols - cc : RT_WINO_L;
                    float mm[6][6][RT_WINO_L], o[4][4][RT_WINO_L], bias[RT_WINO_L];
                    float mm2[4][4][RT_WINO_L], o2[2][2][RT_WINO_L]; /* F(2x2, 3x3) */
                    int a, e, l;
                    for (a = 0; a < WP && !s2; a++) {
                        const float *src = mb + (a * mr + i) * RT_PGEMM_NT + cc;
                        float *dd = WM == 2 ? mm2[a / 4][a % 4] : mm[a / 6][a % 6];
                        for (l = 0; l < RT_WINO_L; l++) dd[l] = src[l];
                    }
                    if (s2) {
                        rt_winos2_out_f32(o2, mb + i * RT_PGEMM_NT + cc, mr * RT_PGEMM_NT, cw);
                        for (a = 0; a < 2; a++)
                            for (e = 0; e < 2; e++) memcpy(o[a][e], o2[a][e], sizeof o2[a][e]);
                    } else if (WM == 2) {
                        rt_wino2_out_f32(o2, mm2);
                        for (a = 0; a < 2; a++)
                            for (e = 0; e < 2; e++) memcpy(o[a][e], o2[a][e], sizeof o2[a][e]);
                    } else {
                        rt_wino_out_f32(o, mm);
                    }
                    for (l = 0; l < RT_WINO_L; l++) bias[l] = b && l < cw ? b[m0 + cc + l] : 0.0f;
                    for (a = 0; a < WM; a++)
                        for (e = 0; e < WM; e++) {
                            const int64_t oh = th * WM + a, ow = tw * WM + e;
                            float *yp;
                            const float *rp;
                            if (oh >= OH || ow >= OW) continue;
                            yp = y + ((n * OH + oh) * OW + ow) * M + m0 + cc;
                            rp = r ? r + (yp - y) : NULL;
                            if (cw == RT_WINO_L && !rp) /* fixed length: vectors */
                                for (l = 0; l < RT_WINO_L; l++) {
                                    float v = o[a][e][l] + bias[l];
                                    v = v < lo ? lo : v; /* NaN passes */
                                    yp[l] = v > hi ? hi : v;
                                }
                            else if (cw == RT_WINO_L)
                                for (l = 0; l < RT_WINO_L; l++) {
                                    float v = o[a][e][l] + bias[l] + rp[l];
                                    v = v < lo ? lo : v;
                                    yp[l] = v > hi ? hi : v;
                                }
                            else
                                for (l = 0; l < cw; l++) {
                                    float v = o[a][e][l] + bias[l] + (rp ? rp[l] : 0.0f);
                                    v = v < lo ? lo : v;
                                    yp[l] = v > hi ? hi : v;
                                }
                            if (!act_clamps) rt_act_row_f32(yp, NULL, cw, act);
                        }
                }
            }
        }
    }
}

/* Tiles [t_begin, t_end) of y = act(conv(x, w) + b + r): x (N,H,W,C), u the transformed
 * weights above, b (M) or NULL, r (N,OH,OW,M) or NULL, y (N,OH,OW,M), act NULL: none.
 * Geometry as rt_pconv_nhwc_f32's, with k 3x3, s 1, d 1, group 1; C <= RT_WINO_VBUF / 36.
 * V on the stack (RT_WINO_VBUF). */
RT_API void rt_wino_x_tiles_f32(const float *x, const float *u, const float *b,
                                const float *r, float *y, const RtConvGeom *g,
                                const RtAct *act, int64_t t_begin, int64_t t_end, int wm) {
    float vb[RT_WINO_VBUF], mb[RT_WINO_P * RT_WINO_TBR * RT_PGEMM_NT];
    rt_wino_x_blocks_f32(x, u, b, r, y, g, act, t_begin, t_end, vb,
                         rt_wino_x_block_in(g->c, RT_WINO_VBUF, RT_WINO_TB_MAX,
                                            rt_wino_x_points(wm)),
                         mb, RT_WINO_TBR, 0, g->m, wm);
}

RT_API void rt_wino_nhwc_tiles_f32(const float *x, const float *u, const float *b,
                                   const float *r, float *y, const RtConvGeom *g,
                                   const RtAct *act, int64_t t_begin, int64_t t_end) {
    rt_wino_x_tiles_f32(x, u, b, r, y, g, act, t_begin, t_end, RT_WINO_M);
}

/* rt_wino_nhwc_tiles_f32 for F(2x2, 3x3): u (4, 4, NP, C, 16), tiles of rt_wino2_tiles. */
RT_API void rt_wino2_nhwc_tiles_f32(const float *x, const float *u, const float *b,
                                    const float *r, float *y, const RtConvGeom *g,
                                    const RtAct *act, int64_t t_begin, int64_t t_end) {
    rt_wino_x_tiles_f32(x, u, b, r, y, g, act, t_begin, t_end, 2);
}

/* rt_wino_nhwc_tiles_f32 with V and the products in ws, a workspace of rt_wino_ws_floats(C)
 * floats, in blocks of tb = rt_wino_block_ws(C, .) tiles, output channel panels [j_lo,
 * j_hi) (rt_wino_x_blocks_f32). */
RT_API void rt_wino_x_panels_ws_f32(const float *x, const float *u, const float *b,
                                    const float *r, float *y, const RtConvGeom *g,
                                    const RtAct *act, int64_t t_begin, int64_t t_end,
                                    float *ws, int64_t tb, int64_t j_lo, int64_t j_hi, int wm) {
    rt_wino_x_blocks_f32(x, u, b, r, y, g, act, t_begin, t_end, ws, tb,
                         ws + rt_wino_x_ws_v(g->c, wm),
                         (tb + RT_PGEMM_MR - 1) / RT_PGEMM_MR * RT_PGEMM_MR, j_lo, j_hi, wm);
}

/* Every panel of rt_wino_x_panels_ws_f32, F(4x4, 3x3). */
RT_API void rt_wino_nhwc_tiles_ws_f32(const float *x, const float *u, const float *b,
                                      const float *r, float *y, const RtConvGeom *g,
                                      const RtAct *act, int64_t t_begin, int64_t t_end,
                                      float *ws, int64_t tb) {
    rt_wino_x_panels_ws_f32(x, u, b, r, y, g, act, t_begin, t_end, ws, tb, 0, g->m, RT_WINO_M);
}

/* rt_wino_nhwc_tiles_ws_f32 for F(2x2, 3x3) (the same workspace holds its blocks: 16
 * points a tile against 36). */
RT_API void rt_wino2_nhwc_tiles_ws_f32(const float *x, const float *u, const float *b,
                                       const float *r, float *y, const RtConvGeom *g,
                                       const RtAct *act, int64_t t_begin, int64_t t_end,
                                       float *ws, int64_t tb) {
    rt_wino_x_panels_ws_f32(x, u, b, r, y, g, act, t_begin, t_end, ws, tb, 0, g->m, 2);
}

/* The whole convolution: every tile of the batch. */
RT_API void rt_wino_nhwc_f32(const float *x, const float *u, const float *b, const float *r,
                             float *y, const RtConvGeom *g, const RtAct *act) {
    rt_wino_nhwc_tiles_f32(x, u, b, r, y, g, act, 0, rt_wino_tiles(g));
}

/* rt_wino_nhwc_tiles_f32 and rt_wino_nhwc_tiles_ws_f32 for stride 2 (RT_WINOS2): u (16,
 * 1, NP, C, 16), tiles of rt_winos2_tiles. */
RT_API void rt_winos2_nhwc_tiles_f32(const float *x, const float *u, const float *b,
                                     const float *r, float *y, const RtConvGeom *g,
                                     const RtAct *act, int64_t t_begin, int64_t t_end) {
    rt_wino_x_tiles_f32(x, u, b, r, y, g, act, t_begin, t_end, RT_WINOS2);
}

RT_API void rt_winos2_nhwc_tiles_ws_f32(const float *x, const float *u, const float *b,
                                        const float *r, float *y, const RtConvGeom *g,
                                        const RtAct *act, int64_t t_begin, int64_t t_end,
                                        float *ws, int64_t tb) {
    rt_wino_x_panels_ws_f32(x, u, b, r, y, g, act, t_begin, t_end, ws, tb, 0, g->m, RT_WINOS2);
}

/* The whole stride-2 convolution. */
RT_API void rt_winos2_nhwc_f32(const float *x, const float *u, const float *b, const float *r,
                               float *y, const RtConvGeom *g, const RtAct *act) {
    rt_winos2_nhwc_tiles_f32(x, u, b, r, y, g, act, 0, rt_winos2_tiles(g));
}

/* rt_wino_nhwc_f32 for F(2x2, 3x3). */
RT_API void rt_wino2_nhwc_f32(const float *x, const float *u, const float *b, const float *r,
                              float *y, const RtConvGeom *g, const RtAct *act) {
    rt_wino2_nhwc_tiles_f32(x, u, b, r, y, g, act, 0, rt_wino2_tiles(g));
}

typedef struct RtWinoTask {
    const float *x, *u, *b, *r;
    float *y;
    const RtConvGeom *g;
    const RtAct *act;
    const RtPar *par;       /* its workers' scratch is the workspace, or NULL: the stack */
    int64_t tb, n, tiles;   /* tiles a block, tasks, tiles in all */
    int64_t pairs;          /* by panels: pairs of output channel panels (RT_PGEMM_NP); 0:
                               by tiles */
    int wm;                 /* the tile's side: 4 (F(4x4, 3x3)) or 2 (F(2x2, 3x3)) */
} RtWinoTask;

RT_API void rt_wino_nhwc_task_f32(void *arg, int64_t task, int worker) {
    const RtWinoTask *k = (const RtWinoTask *)arg;
    const int64_t t0 = rt_par_part(k->tiles, k->n, task);
    const int64_t t1 = rt_par_part(k->tiles, k->n, task + 1);
    if (k->pairs) { /* every tile, a run of panel pairs */
        rt_wino_x_panels_ws_f32(k->x, k->u, k->b, k->r, k->y, k->g, k->act, 0, k->tiles,
                                (float *)rt_par_scratch(k->par, worker), k->tb,
                                rt_par_part(k->pairs, k->n, task) * RT_PGEMM_NP,
                                rt_par_part(k->pairs, k->n, task + 1) * RT_PGEMM_NP, k->wm);
        return;
    }
    if (t0 >= t1) return;
    if (k->par)
        rt_wino_x_panels_ws_f32(k->x, k->u, k->b, k->r, k->y, k->g, k->act, t0, t1,
                                (float *)rt_par_scratch(k->par, worker), k->tb, 0, k->g->m,
                                k->wm);
    else
        rt_wino_x_tiles_f32(k->x, k->u, k->b, k->r, k->y, k->g, k->act, t0, t1, k->wm);
}

/* rt_wino_nhwc_f32 with its tiles shared among par's workers (rt_par.h; NULL: serial):
 * tasks are even runs of tiles (rt_par_part), as many as the blocks of tb tiles rounded up
 * to a multiple of the workers, each run in blocks of at most tb; no tile's bytes depend on
 * its block, so none depend on the split. Even runs, not whole blocks: whole blocks dealt a
 * 14x14 image's 16 tiles as 14 + 2 at two workers (ResNet-50's five 256-channel layers: one
 * worker did 7/8 of the work) and a 28x28 image's 49 as 28 + 21; and, the tiles numbered
 * row by row, an even run covers the image rows that the 1x1 products around it cut evenly
 * (rt_pgemm.h), so that a worker reads the rows it wrote but at the edges of its 4-row
 * tiles (bench/cpu/locality.py: 44% of the 14x14 layers' input had crossed from the other
 * worker, 14% now). V and the products go to the workers' scratch where it holds
 * rt_wino_ws_floats(C) floats (the emitter asks for them): blocks of RT_WINO_TB_BIG tiles
 * on one worker, of RT_WINO_TB_MAX on several.
 * Except a layer whose transformed weights U outweigh its input and output
 * RT_WINO_PANEL_WEIGHTS times (ResNet-50's 256@14x14 layers: 9.4 MB of U, 0.4 MB of
 * activations; 128@28x28: 2.4 MB, 0.8 MB): one task a worker, each every tile (in big
 * blocks, as on one worker) and an even run of the output channel panels. Split by tiles,
 * every worker streamed all of U, once a block of its tiles (bench/cpu/locality.py: 45 +
 * 6.8 of the 75 MiB of weights that both workers read in a ResNet-50 inference, which on
 * two L3s both L3s fetch from memory); by panels each streams its half, once a big block, and
 * transforms the whole input (~150 flops a tile and input channel, against the products'
 * 72 M: 1/60 of them at M = 128), a 14x14 image stays one 16-tile block
 * (rt_wino_p16_avx512) and a 28x28 image is two blocks (AVX-512: 28 + 21 tiles). */
#ifndef RT_WINO_PANEL_WEIGHTS /* a -D to try others; 2 takes 128@28x28 (2.9x) but not
                                 64@56x56 (0.37x), whose workers would each transform 784
                                 tiles to save 0.3 MB of U apiece */
#define RT_WINO_PANEL_WEIGHTS 2
#endif
RT_API void rt_wino_x_par_f32(const float *x, const float *u, const float *b, const float *r,
                              float *y, const RtConvGeom *g, const RtAct *act,
                              const RtPar *par, int wm) {
    const int ws = par && par->scratch &&
                   par->scratch_stride >= rt_wino_x_ws_floats(g->c, wm) * (int64_t)sizeof(float);
    const int64_t T = rt_wino_x_tiles(g, wm), wp = rt_wino_x_points(wm);
    /* stride 2's big blocks: the whole image where it fits one */
    const int64_t big = wm == RT_WINOS2
                            ? rt_wino_x_block_in(g->c, rt_wino_x_ws_v(g->c, wm),
                                                 T <= RT_WINOS2_TB_WS ? RT_WINOS2_TB_WS
                                                                      : RT_WINOS2_BIG_CAP, wp)
                            : rt_wino_block_ws(g->c, 1);
    const int64_t mats = wm == RT_WINOS2 ? 16 : wp; /* matrices of U */
    const int one = !par || !par->pfor || par->workers <= 1;
    const int64_t tb = ws ? (one ? (wm == RT_WINOS2 ? big : rt_wino_block_one(g->c))
                                 : rt_wino_block_ws(g->c, 0))
                          : rt_wino_x_block_in(g->c, RT_WINO_VBUF, RT_WINO_TB_MAX, wp);
    const int64_t blocks = (T + tb - 1) / tb;
    int64_t n = rt_par_chunks(par, blocks, 1);
    RtWinoTask k;
    k.x = x;
    k.u = u;
    k.b = b;
    k.r = r;
    k.y = y;
    k.g = g;
    k.act = act;
    k.par = ws ? par : NULL;
    k.tb = tb;
    k.pairs = 0;
    k.wm = wm;
    if (ws && !one && T > 0 && (g->m + RT_PGEMM_NT - 1) / RT_PGEMM_NT >= par->workers &&
        mats * g->c * g->m >
            RT_WINO_PANEL_WEIGHTS * g->n *
                (g->in[1] * g->in[2] * g->c + g->out[1] * g->out[2] * g->m)) {
        k.pairs = (g->m + RT_PGEMM_NT - 1) / RT_PGEMM_NT;
        k.tb = big;
        k.n = par->workers;
        k.tiles = T;
        rt_par_run(par, k.n, rt_wino_nhwc_task_f32, &k);
        return;
    }
    if (n > 1) { /* a multiple of the workers: the pool deals each an equal share */
        n = (n + par->workers - 1) / par->workers * par->workers;
        n = n < T ? n : T;
    }
    k.n = n;
    k.tiles = T;
    if (T == 0) return;
    rt_par_run(par, n, rt_wino_nhwc_task_f32, &k);
}

RT_API void rt_wino_nhwc_par_f32(const float *x, const float *u, const float *b,
                                 const float *r, float *y, const RtConvGeom *g,
                                 const RtAct *act, const RtPar *par) {
    rt_wino_x_par_f32(x, u, b, r, y, g, act, par, RT_WINO_M);
}

/* rt_wino_nhwc_par_f32 for F(2x2, 3x3): u (4, 4, NP, C, 16) (backend/plan.c, for 3x3
 * layers of more than 256 input channels on 7x7 or 8x8 outputs: one block of 16 tiles,
 * rt_wino_p16_avx512 with AVX-512), the same workspace. */
RT_API void rt_wino2_nhwc_par_f32(const float *x, const float *u, const float *b,
                                  const float *r, float *y, const RtConvGeom *g,
                                  const RtAct *act, const RtPar *par) {
    rt_wino_x_par_f32(x, u, b, r, y, g, act, par, 2);
}

/* rt_wino_nhwc_par_f32 for stride 2 (RT_WINOS2): u (16, 1, NP, C, 16) (backend/plan.c). */
RT_API void rt_winos2_nhwc_par_f32(const float *x, const float *u, const float *b,
                                   const float *r, float *y, const RtConvGeom *g,
                                   const RtAct *act, const RtPar *par) {
    rt_wino_x_par_f32(x, u, b, r, y, g, act, par, RT_WINOS2);
}

#endif
