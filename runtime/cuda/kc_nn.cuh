/* kc_nn.cuh: neural-network kernels of CUDA bundles, float32 or float16 storage (T; the
 * arithmetic is float32 either way): im2col for convolution
 * (the product itself is cuBLASLt's, kc_blas.cuh), direct depthwise convolution with its
 * bias and activation, max/average pooling (channels-last: 16-byte vectors of channels per
 * thread where the channels allow), global average pooling, inference batch
 * normalization, softmax and layer normalization (one warp per row). 2-D spatial shapes;
 * a 1-D op is passed as H = 1. Shapes are baked in by the emitter.
 * Sums (average pools, means, the softmax's exp-sum, statistics of normalizations over rows
 * read from memory) accumulate in double, per thread and across the warp: a float that adds
 * a 160x160 map one value at a time loses up to 25600 ulps, a double's error stays below one
 * float ulp for any length these kernels meet. It is cheap here: these kernels move 4 (or 2)
 * bytes per add, and even GPUs with 1/64-rate double units (GeForce, Jetson) add doubles
 * faster than memory feeds them. Layer normalization of rows held in registers (up to
 * KC_LN_MAX) sums in float: at most 32 values a lane, then the warp's tree (see there).
 * An average over nothing (an empty map) is NaN, as rt_pool.h gives. */
#ifndef KILN_KC_NN_CUH
#define KILN_KC_NN_CUH

#include "kc_common.cuh"

typedef struct KcConv2d {
    int64_t C, H, W;      /* input channels (of one group for im2col), height, width */
    int64_t R, S;         /* kernel */
    int64_t OH, OW;       /* output */
    int64_t sh, sw, ph, pw, dh, dw; /* strides, leading pads, dilations */
} KcConv2d;

/* x: n images (C,H,W) -> col: n blocks (C*R*S, OH*OW), zero outside the image. */
template <typename T>
__global__ void kc_im2col_kernel(const T *x, T *col, KcConv2d p, int64_t n) {
    kc_pdl_enter();
    int64_t P = p.OH * p.OW, CRS = p.C * p.R * p.S, total = n * CRS * P;
    KC_FOR(i, total) {
        int64_t q = i % P, row = (i / P) % CRS, img = i / (P * CRS);
        int64_t s = row % p.S, r = (row / p.S) % p.R, c = row / (p.S * p.R);
        int64_t oh = q / p.OW, ow = q % p.OW;
        int64_t ih = oh * p.sh - p.ph + r * p.dh, iw = ow * p.sw - p.pw + s * p.dw;
        col[i] = (ih >= 0 && ih < p.H && iw >= 0 && iw < p.W)
                     ? x[((img * p.C + c) * p.H + ih) * p.W + iw]
                     : (T)0;
    }
}

template <typename T>
static inline int kc_im2col(cudaStream_t s, const T *x, T *col, const KcConv2d *p, int64_t n) {
    int64_t total = n * p->C * p->R * p->S * p->OH * p->OW;
    if (total <= 0) return KC_OK;
    kc_launch(kc_im2col_kernel<T>, dim3(kc_grid(total)), dim3(KC_THREADS), 0, s, x, col, *p, n);
    KC_LAUNCHED();
    return KC_OK;
}

/* ---- channels-last (NHWC) forms: dims in storage order (N,H,W,C), weights (R,S,C/g,K) ----
 * Geometry comes as KcGeom<I> (the KcConv2d fields in the index type I). */

template <typename I>
struct KcGeom {
    I C, H, W, R, S, OH, OW, sh, sw, ph, pw, dh, dw;
};

template <typename I>
static inline KcGeom<I> kc_geom(const KcConv2d *p) {
    KcGeom<I> g = {(I)p->C, (I)p->H, (I)p->W, (I)p->R, (I)p->S, (I)p->OH, (I)p->OW,
                   (I)p->sh, (I)p->sw, (I)p->ph, (I)p->pw, (I)p->dh, (I)p->dw};
    return g;
}

/* x: n images (H,W,C) -> col: (n*OH*OW, R*S*C) row-major, per group g of G a block of
 * columns in (r, s, c) order as the group's weight rows; zero outside the image.
 * Consecutive threads walk c: coalesced both sides. */
template <typename T, typename I>
__global__ void kc_im2col_nhwc_kernel(const T *x, T *col, KcGeom<I> p, I n, I G) {
    kc_pdl_enter();
    I RSC = p.R * p.S * p.C, total = n * p.OH * p.OW * RSC, Cg = p.C / G;
    I RSCg = p.R * p.S * Cg;
    KC_FOR(i64, total) {
        I i = (I)i64;
        I j = i % RSC, g = j / RSCg, rem = j % RSCg;
        I c = g * Cg + rem % Cg, s = (rem / Cg) % p.S, r = rem / (Cg * p.S);
        I row = i / RSC, ow = row % p.OW, oh = (row / p.OW) % p.OH;
        I img = row / (p.OW * p.OH);
        I ih = oh * p.sh - p.ph + r * p.dh, iw = ow * p.sw - p.pw + s * p.dw;
        col[i] = (ih >= 0 && ih < p.H && iw >= 0 && iw < p.W)
                     ? x[((img * p.H + ih) * p.W + iw) * p.C + c]
                     : T();
    }
}

/* One launch of kc_im2col_nhwc_kernel moving elements of type V (T itself, or 16-byte
 * vectors of T when a group's channels come in whole vectors). */
template <typename V>
static inline void kc_im2col_nhwc_launch(cudaStream_t s, const void *x, void *col,
                                         const KcConv2d *p, int64_t n, int64_t groups,
                                         int64_t per) {
    KcConv2d q = *p;
    q.C /= per;
    int64_t total = n * q.OH * q.OW * q.R * q.S * q.C;
    if (kc_small(total) && kc_small(n * q.H * q.W * q.C))
        kc_launch(kc_im2col_nhwc_kernel<V, int32_t>, dim3(kc_grid(total)), dim3(KC_THREADS), 0, s,
                  (const V *)x, (V *)col, kc_geom<int32_t>(&q), (int32_t)n, (int32_t)groups);
    else
        kc_launch(kc_im2col_nhwc_kernel<V, int64_t>, dim3(kc_grid(total)), dim3(KC_THREADS), 0, s,
                  (const V *)x, (V *)col, kc_geom<int64_t>(&q), n, groups);
}

/* kc_im2col_nhwc_kernel for few channels per group (fewer than a 16-byte vector holds: a
 * network's first convolution on 3 colour channels): one thread per (output pixel, group,
 * r, s) copies the group's Cg channels of one input pixel, so that the index arithmetic is
 * done once per Cg elements instead of once per element; consecutive threads write
 * consecutive runs of the row. */
template <typename T, typename I>
__global__ void kc_im2col_nhwc_few_kernel(const T *x, T *col, KcGeom<I> p, I n, I G) {
    kc_pdl_enter();
    I Cg = p.C / G, RS = p.R * p.S, RSG = RS * G, total = n * p.OH * p.OW * RSG;
    KC_FOR(i64, total) {
        I i = (I)i64;
        I j = i % RSG, g = j / RS, rs = j % RS, s = rs % p.S, r = rs / p.S;
        I row = i / RSG, ow = row % p.OW, oh = (row / p.OW) % p.OH;
        I img = row / (p.OW * p.OH);
        I ih = oh * p.sh - p.ph + r * p.dh, iw = ow * p.sw - p.pw + s * p.dw;
        T *dst = col + row * RSG * Cg + (g * RS + rs) * Cg;
        if (ih >= 0 && ih < p.H && iw >= 0 && iw < p.W) {
            const T *src = x + ((img * p.H + ih) * p.W + iw) * p.C + g * Cg;
            for (I c = 0; c < Cg; c++) dst[c] = src[c];
        } else {
            for (I c = 0; c < Cg; c++) dst[c] = T();
        }
    }
}

template <typename T>
static inline int kc_im2col_nhwc(cudaStream_t s, const T *x, T *col, const KcConv2d *p,
                                 int64_t n, int64_t groups) {
    const int64_t per = 16 / (int64_t)sizeof(T); /* elements of T in a 16-byte vector */
    int64_t total = n * p->OH * p->OW * p->R * p->S * p->C;
    if (total <= 0) return KC_OK;
    if ((p->C / groups) % per == 0 && ((uintptr_t)x | (uintptr_t)col) % 16 == 0) {
        kc_im2col_nhwc_launch<uint4>(s, x, col, p, n, groups, per);
    } else if (p->C / groups < per) {
        int64_t runs = total / (p->C / groups);
        if (kc_small(total) && kc_small(n * p->H * p->W * p->C))
            kc_launch(kc_im2col_nhwc_few_kernel<T, int32_t>, dim3(kc_grid(runs)), dim3(KC_THREADS),
                      0, s, x, col, kc_geom<int32_t>(p), (int32_t)n, (int32_t)groups);
        else
            kc_launch(kc_im2col_nhwc_few_kernel<T, int64_t>, dim3(kc_grid(runs)), dim3(KC_THREADS),
                      0, s, x, col, kc_geom<int64_t>(p), n, groups);
    } else {
        kc_im2col_nhwc_launch<T>(s, x, col, p, n, groups, 1);
    }
    KC_LAUNCHED();
    return KC_OK;
}

/* Depthwise NHWC: x (N,H,W,C), w (R,S,1,C*mult), b (C*mult) or NULL, r like y or NULL,
 * y (N,OH,OW,C*mult) = act(conv + b + r); output channel k reads input channel k / mult. */
template <typename T, typename I>
__global__ void kc_dwconv_nhwc_kernel(const T *x, const T *w, const T *b, const T *r, T *y,
                                      KcGeom<I> p, I N, I mult, int act, float al, float be) {
    kc_pdl_enter();
    I K = p.C * mult, total = N * p.OH * p.OW * K;
    KC_FOR(i64, total) {
        I i = (I)i64;
        I k = i % K, pix = i / K, ow = pix % p.OW, oh = (pix / p.OW) % p.OH;
        I n = pix / (p.OW * p.OH), c = k / mult;
        float acc = b ? (float)b[k] : 0.0f;
        for (I rr = 0; rr < p.R; rr++) {
            I ih = oh * p.sh - p.ph + rr * p.dh;
            if (ih < 0 || ih >= p.H) continue;
            for (I ss = 0; ss < p.S; ss++) {
                I iw = ow * p.sw - p.pw + ss * p.dw;
                if (iw >= 0 && iw < p.W)
                    acc += (float)x[((n * p.H + ih) * p.W + iw) * p.C + c] *
                           (float)w[(rr * p.S + ss) * K + k];
            }
        }
        if (r) acc += (float)r[i];
        y[i] = (T)kc_act(acc, act, al, be);
    }
}

/* 16 bytes of T: the vector the channel-vectorized NHWC kernels move per load (8 float16
 * or 4 float32 channels of one pixel). */
template <typename T>
struct __align__(16) KcVec {
    T e[16 / sizeof(T)];
};

/* Whether the channel-vectorized NHWC kernels take these pointers (NULL passes) and c
 * channels: whole 16-byte vectors, every pointer on a 16-byte boundary. */
template <typename T>
static inline int kc_vec_ok(int64_t c, const void *a, const void *b, const void *d,
                            const void *e, const void *f) {
    const int64_t per = 16 / (int64_t)sizeof(T);
    return 16 % sizeof(T) == 0 && c % per == 0 &&
           ((uintptr_t)a | (uintptr_t)b | (uintptr_t)d | (uintptr_t)e | (uintptr_t)f) % 16 == 0;
}

/* Depthwise NHWC (multiplier 1), vectorized over channels: one thread computes one output
 * pixel's V = 16/sizeof(T) consecutive channels with 16-byte loads of input, weights, bias
 * and residual and one 16-byte store; float32 accumulation and the same epilogue as
 * kc_dwconv_nhwc_kernel. Consecutive threads take consecutive channel vectors, then pixels
 * (coalesced). KR/KS: the kernel's height and width when fixed at compile time (3x3,
 * unrolled), 0 when read from p. */
template <typename T, typename I, int KR, int KS>
__global__ void kc_dwconv_nhwc_vec_kernel(const T *x, const T *w, const T *b, const T *r, T *y,
                                          KcGeom<I> p, I N, int act, float al, float be) {
    kc_pdl_enter();
    enum { V = 16 / sizeof(T) };
    typedef KcVec<T> Vec;
    const I CV = p.C / V, total = N * p.OH * p.OW * CV;
    const I R = KR ? (I)KR : p.R, S = KS ? (I)KS : p.S;
    const Vec *xv = (const Vec *)x, *wv = (const Vec *)w;
    KC_FOR(i64, total) {
        I i = (I)i64;
        I cv = i % CV, pix = i / CV, ow = pix % p.OW, oh = (pix / p.OW) % p.OH;
        I n = pix / (p.OW * p.OH);
        float acc[V];
        if (b) {
            Vec bb = ((const Vec *)b)[cv];
#pragma unroll
            for (int j = 0; j < V; j++) acc[j] = (float)bb.e[j];
        } else {
#pragma unroll
            for (int j = 0; j < V; j++) acc[j] = 0.0f;
        }
        const I ih0 = oh * p.sh - p.ph, iw0 = ow * p.sw - p.pw;
#pragma unroll
        for (I rr = 0; rr < R; rr++) {
            I ih = ih0 + rr * p.dh;
            if (ih < 0 || ih >= p.H) continue;
            const Vec *xrow = xv + (n * p.H + ih) * p.W * CV + cv;
#pragma unroll
            for (I ss = 0; ss < S; ss++) {
                I iw = iw0 + ss * p.dw;
                if (iw < 0 || iw >= p.W) continue;
                Vec a = xrow[iw * CV], k = wv[(rr * S + ss) * CV + cv];
#pragma unroll
                for (int j = 0; j < V; j++) acc[j] += (float)a.e[j] * (float)k.e[j];
            }
        }
        if (r) {
            Vec rv = ((const Vec *)r)[i];
#pragma unroll
            for (int j = 0; j < V; j++) acc[j] += (float)rv.e[j];
        }
        Vec o;
#pragma unroll
        for (int j = 0; j < V; j++) o.e[j] = (T)kc_act(acc[j], act, al, be);
        ((Vec *)y)[i] = o;
    }
}

/* One launch of the vectorized depthwise kernel in index type I (3x3 unrolled). */
template <typename T, typename I>
static inline void kc_dwconv_nhwc_vec_launch(cudaStream_t s, const T *x, const T *w,
                                             const T *b, const T *r, T *y, const KcConv2d *p,
                                             int64_t N, int act, float al, float be) {
    int64_t total = N * p->OH * p->OW * (p->C / (int64_t)(16 / sizeof(T)));
    if (p->R == 3 && p->S == 3)
        kc_launch(kc_dwconv_nhwc_vec_kernel<T, I, 3, 3>, dim3(kc_grid(total)), dim3(KC_THREADS), 0,
                  s, x, w, b, r, y, kc_geom<I>(p), (I)N, act, al, be);
    else
        kc_launch(kc_dwconv_nhwc_vec_kernel<T, I, 0, 0>, dim3(kc_grid(total)), dim3(KC_THREADS), 0,
                  s, x, w, b, r, y, kc_geom<I>(p), (I)N, act, al, be);
}


/* Output pixels a thread of kc_dwconv3_nhwc_kernel makes (along W) where the launcher
 * takes it, and the fewest threads (blocks of pixels x channel vectors) for which it does:
 * 128 blocks of KC_THREADS, about one per SM of an H100/H200. */
#define KC_DW_PW 2
#define KC_DW_MIN_THREADS 32768

/* Column iw of an input row (channel vector cv's, xrow pointing at column 0) as float, zero
 * outside 0..W-1. */
template <typename T, typename I>
static __device__ __forceinline__ void kc_dw_col(float *a, const KcVec<T> *xrow, I iw, I W,
                                                 I CV) {
    if (iw >= 0 && iw < W) {
        KcVec<T> av = xrow[iw * CV];
#pragma unroll
        for (int j = 0; j < (int)(16 / sizeof(T)); j++) a[j] = (float)av.e[j];
    } else {
#pragma unroll
        for (int j = 0; j < (int)(16 / sizeof(T)); j++) a[j] = 0.0f;
    }
}

/* Depthwise 3x3 NHWC (multiplier 1, dilation 1, stride ST = 1 or 2), vectorized over
 * channels and blocked along W: one thread makes PW consecutive output pixels of one row
 * for one 16-byte channel vector. Each of the window's 3 input rows is read once per thread
 * as its ST*(PW-1)+3 column vectors, each converted to float once and used by every output
 * whose window covers it (PW=2: 4 loads a row for 2 outputs at stride 1, 5 at stride 2,
 * against 3 per output in kc_dwconv_nhwc_vec_kernel), the 9 weight vectors once per thread
 * instead of once per output; bias, residual and activation as there. Consecutive threads
 * take consecutive channel vectors, then blocks of PW pixels (coalesced). Outputs past OW
 * (the last block of a row) are computed from zero columns and not stored. */
template <typename T, typename I, int ST, int PW, int ACT = -1>
__global__ void __launch_bounds__(KC_THREADS)
kc_dwconv3_nhwc_kernel(const T *__restrict__ x, const T *__restrict__ w,
                       const T *__restrict__ b, const T *__restrict__ r, T *__restrict__ y,
                       KcGeom<I> p, I N, int act, float al, float be) {
    kc_pdl_enter();
    enum { V = 16 / sizeof(T), COLS = ST * (PW - 1) + 3 };
    if (ACT >= 0) act = ACT;
    typedef KcVec<T> Vec;
    const I CV = p.C / V, OWB = (p.OW + PW - 1) / PW, total = N * p.OH * OWB * CV;
    const Vec *xv = (const Vec *)x, *wv = (const Vec *)w;
    KC_FOR(i64, total) {
        I i = (I)i64;
        I cv = i % CV, t = i / CV, ob = t % OWB;
        t /= OWB;
        const I oh = t % p.OH, n = t / p.OH, ow0 = ob * PW;
        float acc[PW][V];
        {
            float b0[V];
            if (b) {
                Vec bb = ((const Vec *)b)[cv];
#pragma unroll
                for (int j = 0; j < V; j++) b0[j] = (float)bb.e[j];
            } else {
#pragma unroll
                for (int j = 0; j < V; j++) b0[j] = 0.0f;
            }
#pragma unroll
            for (int o = 0; o < PW; o++)
#pragma unroll
                for (int j = 0; j < V; j++) acc[o][j] = b0[j];
        }
        const I ih0 = oh * ST - p.ph, iw0 = ow0 * ST - p.pw;
#pragma unroll
        for (int rr = 0; rr < 3; rr++) {
            const I ih = ih0 + rr;
            if (ih < 0 || ih >= p.H) continue;
            const Vec *xrow = xv + (n * p.H + ih) * p.W * CV + cv;
            /* stride 2: the row's columns loaded before its weights (the 4 stride-2 layers
             * of MobileNetV2 at batch 256 0.469 ms against 0.511 unblocked); at stride 1
             * that order was 11 % slower than this one (docs/cuda.md) */
            float ap[ST == 2 ? COLS : 1][V];
            if (ST == 2) {
#pragma unroll
                for (int c = 0; c < COLS; c++) kc_dw_col<T, I>(ap[c], xrow, iw0 + c, p.W, CV);
            }
            float wf[3][V];
#pragma unroll
            for (int ss = 0; ss < 3; ss++) {
                Vec k = wv[(rr * 3 + ss) * CV + cv];
#pragma unroll
                for (int j = 0; j < V; j++) wf[ss][j] = (float)k.e[j];
            }
#pragma unroll
            for (int c = 0; c < COLS; c++) {
                float a[V];
                if (ST == 2) {
#pragma unroll
                    for (int j = 0; j < V; j++) a[j] = ap[ST == 2 ? c : 0][j];
                } else {
                    kc_dw_col<T, I>(a, xrow, iw0 + c, p.W, CV);
                }
#pragma unroll
                for (int o = 0; o < PW; o++) {
                    const int ss = c - o * ST; /* the tap of output o that column c is */
                    if (ss >= 0 && ss < 3) {
#pragma unroll
                        for (int j = 0; j < V; j++) acc[o][j] += a[j] * wf[ss][j];
                    }
                }
            }
        }
        const I at0 = ((n * p.OH + oh) * p.OW + ow0) * CV + cv;
#pragma unroll
        for (int o = 0; o < PW; o++) {
            if (ow0 + o >= p.OW) break;
            const I at = at0 + (I)o * CV;
            if (r) {
                Vec rv = ((const Vec *)r)[at];
#pragma unroll
                for (int j = 0; j < V; j++) acc[o][j] += (float)rv.e[j];
            }
            Vec out;
#pragma unroll
            for (int j = 0; j < V; j++) out.e[j] = (T)kc_act(acc[o][j], act, al, be);
            ((Vec *)y)[at] = out;
        }
    }
}

/* Whether the launcher takes kc_dwconv3_nhwc_kernel (PW = KC_DW_PW) for a depthwise
 * convolution (multiplier 1, channels in aligned 16-byte vectors checked by the caller):
 * 3x3, dilation 1, stride 1 or 2, and enough blocks of pixels to fill the GPU (a batch-1
 * MobileNetV2 keeps the unblocked kernel's 2x more threads). Measured on an H200 at
 * MobileNetV2 fp16 batch 256 (tests/cuda/conv_gpu.cu --time, docs/cuda.md): at stride 1
 * PW=2 takes the six layer shapes 1.60 -> 1.30 ms in all (PW=4 1.62, PW=8 1.92: the
 * accumulators' registers cost more than the loads they save); at stride 2, with the row's
 * columns loaded before its weights, PW=2 takes the four 0.511 -> 0.469 ms (loaded the
 * stride-1 way it was slower than the unblocked kernel, 0.54 against 0.52). */
static inline int kc_dwconv3_ok(const KcConv2d *p, int64_t N, int64_t per) {
    return p->R == 3 && p->S == 3 && p->dh == 1 && p->dw == 1 && p->sh == p->sw &&
           (p->sh == 1 || p->sh == 2) &&
           N * p->OH * ((p->OW + KC_DW_PW - 1) / KC_DW_PW) * (p->C / per) >= KC_DW_MIN_THREADS;
}

template <typename T, typename I, int ACT>
static inline void kc_dwconv3_nhwc_run(cudaStream_t s, const T *x, const T *w, const T *b,
                                       const T *r, T *y, const KcConv2d *p, int64_t N, int act,
                                       float al, float be) {
    int64_t total = N * p->OH * ((p->OW + KC_DW_PW - 1) / KC_DW_PW) *
                    (p->C / (int64_t)(16 / sizeof(T)));
    if (p->sh == 2)
        kc_launch(kc_dwconv3_nhwc_kernel<T, I, 2, KC_DW_PW, ACT>, dim3(kc_grid(total)),
                  dim3(KC_THREADS), 0, s, x, w, b, r, y, kc_geom<I>(p), (I)N, act, al, be);
    else
        kc_launch(kc_dwconv3_nhwc_kernel<T, I, 1, KC_DW_PW, ACT>, dim3(kc_grid(total)),
                  dim3(KC_THREADS), 0, s, x, w, b, r, y, kc_geom<I>(p), (I)N, act, al, be);
}

/* Clip (ReLU6, the activation of the depthwise layers of the MobileNets) compiled into the
 * epilogue, as kc_stem_tc's; any other activation read at run time. */
template <typename T, typename I>
static inline void kc_dwconv3_nhwc_launch(cudaStream_t s, const T *x, const T *w, const T *b,
                                          const T *r, T *y, const KcConv2d *p, int64_t N,
                                          int act, float al, float be) {
    if (act == KC_ACT_CLIP)
        kc_dwconv3_nhwc_run<T, I, KC_ACT_CLIP>(s, x, w, b, r, y, p, N, act, al, be);
    else
        kc_dwconv3_nhwc_run<T, I, -1>(s, x, w, b, r, y, p, N, act, al, be);
}

/* Depthwise NHWC: the W-blocked 3x3 kernel or the vectorized kernel where the multiplier
 * is 1 and the channels come in aligned 16-byte vectors, else one thread per output. */
template <typename T>
static inline int kc_dwconv_nhwc(cudaStream_t s, const T *x, const T *w, const T *b,
                                 const T *r, T *y, const KcConv2d *p, int64_t N, int64_t mult,
                                 int act, float al, float be) {
    int64_t total = N * p->C * mult * p->OH * p->OW;
    if (total <= 0) return KC_OK;
    int small = kc_small(total) && kc_small(N * p->H * p->W * p->C);
    if (mult == 1 && kc_vec_ok<T>(p->C, x, w, b, r, y) &&
        kc_dwconv3_ok(p, N, 16 / (int64_t)sizeof(T))) {
        if (small) kc_dwconv3_nhwc_launch<T, int32_t>(s, x, w, b, r, y, p, N, act, al, be);
        else kc_dwconv3_nhwc_launch<T, int64_t>(s, x, w, b, r, y, p, N, act, al, be);
    } else if (mult == 1 && kc_vec_ok<T>(p->C, x, w, b, r, y)) {
        if (small) kc_dwconv_nhwc_vec_launch<T, int32_t>(s, x, w, b, r, y, p, N, act, al, be);
        else kc_dwconv_nhwc_vec_launch<T, int64_t>(s, x, w, b, r, y, p, N, act, al, be);
    } else if (small)
        kc_launch(kc_dwconv_nhwc_kernel<T, int32_t>, dim3(kc_grid(total)), dim3(KC_THREADS), 0, s,
                  x, w, b, r, y, kc_geom<int32_t>(p), (int32_t)N, (int32_t)mult, act, al, be);
    else
        kc_launch(kc_dwconv_nhwc_kernel<T, int64_t>, dim3(kc_grid(total)), dim3(KC_THREADS), 0, s,
                  x, w, b, r, y, kc_geom<int64_t>(p), N, mult, act, al, be);
    KC_LAUNCHED();
    return KC_OK;
}

/* Convolution with a short reduction that is not a plain 1x1 one, R*S*C <= 32 (float16,
 * one group, K in eights): an RGB stem such as MobileNetV2's 3x3 one (27).
 * y (N,OH,OW,K) = act(conv(x, w) + bias + r) on CUDA cores with float32 sums: at most 32
 * multiply-adds per output element against its 2 bytes of store, where im2col + cuBLASLt
 * writes and reads a col matrix and runs ReLU6 as a pass of its own. A block keeps W
 * (RC x K, zero rows past R*S*C) and the bias as float in shared memory, read once per
 * block, which then walks tiles of 256 output pixels (grid stride); a warp takes 32
 * consecutive pixels (lane = pixel), gathers each lane's RC reduction elements once into
 * registers as float, through a shared table of each element's offset and tap, then makes
 * the K/8 output octets in turn: the W segment it multiplies is the same for every lane (a
 * shared-memory broadcast), the 8 results one 16-byte store with bias, residual and
 * activation applied before it. (The same kernel reading plain 1x1 convolutions of 16-32
 * channels with 16-byte loads was measured 2.1x slower than cuBLASLt's product and its
 * ReLU6 pass on MobileNetV2's expansions: docs/cuda.md.) K = 32 or 64 on an sm_80+ device
 * take kc_conv_small_tc below instead (tensor cores). */
#define KC_CS_WARPS 8
#define KC_CS_MAX_FLOATS 8192 /* RC*K of W + K of bias, float, in shared memory: 32 KB */

template <int RC>
__global__ void __launch_bounds__(KC_CS_WARPS *KC_WARP, 2) /* 16 warps an SM: 40 B of spill
                                                               at RC 32, none below */
kc_conv_small_kernel(const __half *__restrict__ x, const __half *__restrict__ w,
                     const __half *__restrict__ bias, const __half *__restrict__ r,
                     __half *__restrict__ y, KcGeom<int32_t> p, int32_t P, int32_t K, int act,
                     float al, float be) {
    kc_pdl_enter();
    extern __shared__ __align__(16) float kc_cs_smem[];
    float *sw = kc_cs_smem, *sbias = sw + RC * K;
    /* element k of the reduction: its offset from the pixel's tap (0,0), and that tap */
    __shared__ int32_t t_off[RC], t_dy[RC], t_dx[RC];
    const int32_t RSC = p.R * p.S * p.C;
    for (int i = threadIdx.x; i < RC * K; i += blockDim.x)
        sw[i] = i < RSC * K ? __half2float(w[i]) : 0.0f;
    for (int i = threadIdx.x; i < K; i += blockDim.x)
        sbias[i] = bias ? __half2float(bias[i]) : 0.0f;
    if (threadIdx.x < RC) {
        int32_t k = threadIdx.x, c = k % p.C, tap = k / p.C, dy = (tap / p.S) * p.dh,
                dx = (tap % p.S) * p.dw;
        bool in = k < RSC;
        t_off[k] = in ? (dy * p.W + dx) * p.C + c : 0;
        t_dy[k] = in ? dy : INT32_MIN / 2; /* past R*S*C: never inside the image */
        t_dx[k] = dx;
    }
    __syncthreads();
    const int lane = threadIdx.x % KC_WARP, warp = threadIdx.x / KC_WARP;
    const int32_t KO = K / 8, step = gridDim.x * KC_CS_WARPS * KC_WARP;
    for (int32_t p0 = (blockIdx.x * KC_CS_WARPS + warp) * KC_WARP; p0 < P; p0 += step) {
        const int32_t pix = p0 + lane;
        if (pix >= P) break; /* no barrier below: a lane may leave */
        float xf[RC];
        int32_t ow = pix % p.OW, oh = (pix / p.OW) % p.OH, n = pix / (p.OW * p.OH);
        int32_t ih0 = oh * p.sh - p.ph, iw0 = ow * p.sw - p.pw;
        const __half *xb = x + (int64_t)n * p.H * p.W * p.C;
#pragma unroll
        for (int k = 0; k < RC; k++) {
            int32_t ih = ih0 + t_dy[k], iw = iw0 + t_dx[k];
            bool ok = ih >= 0 && ih < p.H && iw >= 0 && iw < p.W;
            xf[k] = ok ? __half2float(xb[(ih0 * p.W + iw0) * p.C + t_off[k]]) : 0.0f;
        }
        for (int32_t j = 0; j < KO; j++) {
            float acc[8];
            const float4 b0 = *(const float4 *)(sbias + j * 8);
            const float4 b1 = *(const float4 *)(sbias + j * 8 + 4);
            acc[0] = b0.x, acc[1] = b0.y, acc[2] = b0.z, acc[3] = b0.w;
            acc[4] = b1.x, acc[5] = b1.y, acc[6] = b1.z, acc[7] = b1.w;
#pragma unroll
            for (int k = 0; k < RC; k++) {
                const float4 w0 = *(const float4 *)(sw + k * K + j * 8);
                const float4 w1 = *(const float4 *)(sw + k * K + j * 8 + 4);
                acc[0] += xf[k] * w0.x, acc[1] += xf[k] * w0.y;
                acc[2] += xf[k] * w0.z, acc[3] += xf[k] * w0.w;
                acc[4] += xf[k] * w1.x, acc[5] += xf[k] * w1.y;
                acc[6] += xf[k] * w1.z, acc[7] += xf[k] * w1.w;
            }
            const int64_t at = (int64_t)pix * K + j * 8;
            if (r) {
                uint4 rv = *(const uint4 *)(r + at);
                const __half *rh = (const __half *)&rv;
#pragma unroll
                for (int e = 0; e < 8; e++) acc[e] += __half2float(rh[e]);
            }
            uint4 out;
            __half *o8 = (__half *)&out;
#pragma unroll
            for (int e = 0; e < 8; e++) o8[e] = __float2half_rn(kc_act(acc[e], act, al, be));
            *(uint4 *)(y + at) = out;
        }
    }
}

template <int RC>
static inline void kc_conv_small_launch(cudaStream_t s, const __half *x, const __half *w,
                                        const __half *bias, const __half *r, __half *y,
                                        const KcConv2d *p, int64_t P, int64_t K, int act,
                                        float al, float be) {
    /* 132 multiprocessors (H100/H200) x 8 blocks walk the tiles of 256 pixels; fewer blocks
     * where there are fewer tiles */
    int64_t tiles = (P + KC_CS_WARPS * KC_WARP - 1) / (KC_CS_WARPS * KC_WARP);
    unsigned blocks = (unsigned)(tiles < 1056 ? tiles : 1056);
    size_t smem = (size_t)(RC * K + K) * sizeof(float);
    kc_launch(kc_conv_small_kernel<RC>, dim3(blocks), dim3(KC_CS_WARPS * KC_WARP), smem, s, x, w,
              bias, r, y, kc_geom<int32_t>(p), (int32_t)P, (int32_t)K, act, al, be);
}

/* kc_conv_small on tensor cores (sm_80+, K = 8 NT output channels, NT 4 or 8; the
 * reduction R*S*C in KS steps of 16, zero-padded; also ResNet-50's 7x7x3 stem, 147 -> 160,
 * through kc_conv_few): mma.sync m16n8k16, float16 products, float32 sums. A warp takes 16
 * output pixels at a time; each lane gathers its A fragment (pixels g and g + 8, reduction
 * elements 2 t4, 2 t4 + 1 and those + 8 of each step) straight from x through a shared table
 * of each element's offset and tap, so the 16 x 16 A tile is read once, never written as a
 * col matrix; W (transposed, rows of K padded by 8 halves: the B fragments' 4-byte loads
 * fall in distinct banks) and the bias stay in shared memory for the block's life. Bias,
 * residual and activation are applied to the float32 C fragments, which are then staged
 * as float16 in the warp's slice of shared memory and stored as whole 16-byte vectors of
 * consecutive pixels (a warp writes 16 K-channel pixels, contiguous, in 2 or 4 stores).
 * MobileNetV2's stem (3x3x3 -> 32) takes 2 steps and 4 products a step. */
#define KC_CST_WARPS 8
#define KC_CST_MAX_KS 10 /* reductions up to 160: 7x7x3 */

static __device__ __forceinline__ uint32_t kc_cst_pack(__half lo, __half hi) {
    __half2 h = __halves2half2(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
}

/* The epilogue of kc_conv_small_tc and kc_stem_tc on a warp's tile of C fragments, 16 pixels
 * x NT * 8 channels (the lane's: pixels g and g + 8, channels 8 j + 2 t4 (+1)): bias, residual
 * and activation in float32, staged as float16 in the warp's rows yw (NT * 8 + 8 halves
 * apart), then stored as 16-byte vectors of consecutive pixels. Pixel i of the tile is row
 * pix0 + i of y and r; its first `rows` exist. ACT: the activation where it is a constant
 * (kc_act's switch, asked per element, was most of the epilogue's instructions), -1 act. */
template <int NT, int ACT = -1>
static __device__ __forceinline__ void kc_cst_tile_out(const float (*acc)[4], const float *sb,
                                                       const __half *r, __half *y, __half *yw,
                                                       int64_t pix0, int32_t rows, int act,
                                                       float al, float be, int lane) {
    enum { K = NT * 8, YS = K + 8 };
    if (ACT >= 0) act = ACT;
    const int g = lane / 4, t4 = lane % 4;
#pragma unroll
    for (int j = 0; j < NT; j++) {
        const int col = j * 8 + t4 * 2;
#pragma unroll
        for (int e = 0; e < 2; e++) {
            float v0 = acc[j][2 * e] + sb[col], v1 = acc[j][2 * e + 1] + sb[col + 1];
            if (r && g + 8 * e < rows) {
                const __half2 rv = *(const __half2 *)(r + (pix0 + g + 8 * e) * K + col);
                v0 += __low2float(rv), v1 += __high2float(rv);
            }
            *(__half2 *)(yw + (g + 8 * e) * YS + col) =
                __floats2half2_rn(kc_act(v0, act, al, be), kc_act(v1, act, al, be));
        }
    }
    __syncwarp();
#pragma unroll
    for (int i = lane; i < 16 * NT; i += KC_WARP) { /* 16-byte vectors, pixel-major */
        const int row = i / NT, cv = i % NT;
        if (row < rows)
            *(uint4 *)(y + (pix0 + row) * K + cv * 8) = *(const uint4 *)(yw + row * YS + cv * 8);
    }
    __syncwarp();
}

template <int NT>
__global__ void __launch_bounds__(KC_CST_WARPS *KC_WARP)
kc_conv_small_tc_kernel(const __half *__restrict__ x, const __half *__restrict__ w,
                        const __half *__restrict__ bias, const __half *__restrict__ r,
                        __half *__restrict__ y, KcGeom<int32_t> p, int32_t P, int32_t KS,
                        int act, float al, float be) {
    kc_pdl_enter();
    enum { K = NT * 8, YS = K + 8 }; /* YS: halves per staged pixel (16-byte rows, banks) */
    extern __shared__ __align__(16) unsigned char kc_cst_buf[];
    const int32_t KP = KS * 16 + 8, RSC = p.R * p.S * p.C; /* KP: halves per row of wt */
    __half *wt = (__half *)kc_cst_buf;     /* [K][KP]: W transposed */
    int2 *tab = (int2 *)(wt + K * KP);     /* [KS*16]: {offset, dy << 16 | dx}, y -1 past RSC */
    float *sb = (float *)(tab + KS * 16);  /* [K] */
    __half *ys = (__half *)(sb + K);       /* [warps][16][YS] */
    for (int i = threadIdx.x; i < K * KS * 16; i += blockDim.x) {
        int32_t n = i / (KS * 16), k = i % (KS * 16);
        wt[n * KP + k] = k < RSC ? w[k * K + n] : __float2half(0.0f);
    }
    for (int i = threadIdx.x; i < K; i += blockDim.x)
        sb[i] = bias ? __half2float(bias[i]) : 0.0f;
    for (int k = threadIdx.x; k < KS * 16; k += blockDim.x) {
        int32_t c = k % p.C, tap = k / p.C, dy = (tap / p.S) * p.dh, dx = (tap % p.S) * p.dw;
        tab[k] = k < RSC ? make_int2((dy * p.W + dx) * p.C + c, (dy << 16) | dx)
                         : make_int2(0, -1);
    }
    __syncthreads();
    const int lane = threadIdx.x % KC_WARP, warp = threadIdx.x / KC_WARP;
    const int g = lane / 4, t4 = lane % 4;
    __half *yw = ys + warp * 16 * YS;
    const int32_t step = gridDim.x * KC_CST_WARPS * 16;
    for (int32_t p0 = (blockIdx.x * KC_CST_WARPS + warp) * 16; p0 < P; p0 += step) {
        int32_t ih0[2], iw0[2], base[2];
        bool live[2];
#pragma unroll
        for (int e = 0; e < 2; e++) { /* the lane's pixels: rows g and g + 8 of the tile */
            int32_t pix = p0 + g + 8 * e;
            live[e] = pix < P;
            pix = live[e] ? pix : 0;
            int32_t ow = pix % p.OW, oh = (pix / p.OW) % p.OH, n = pix / (p.OW * p.OH);
            ih0[e] = oh * p.sh - p.ph, iw0[e] = ow * p.sw - p.pw;
            base[e] = ((n * p.H + ih0[e]) * p.W + iw0[e]) * p.C;
        }
        float acc[NT][4];
#pragma unroll
        for (int j = 0; j < NT; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
#pragma unroll 2
        for (int32_t s = 0; s < KS; s++) {
            uint32_t a[4];
#pragma unroll
            for (int h = 0; h < 2; h++) { /* reduction elements 16 s + 8 h + 2 t4 (+1) */
                const int4 tt = *(const int4 *)(tab + s * 16 + h * 8 + t4 * 2);
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    __half v[2];
#pragma unroll
                    for (int q = 0; q < 2; q++) {
                        const int32_t off = q ? tt.z : tt.x, tap = q ? tt.w : tt.y;
                        const int32_t ih = ih0[e] + (tap >> 16), iw = iw0[e] + (tap & 0xffff);
                        const bool ok = live[e] && tap >= 0 && ih >= 0 && ih < p.H && iw >= 0 &&
                                        iw < p.W;
                        v[q] = ok ? x[base[e] + off] : __float2half(0.0f);
                    }
                    a[h * 2 + e] = kc_cst_pack(v[0], v[1]);
                }
            }
            const __half *wb = wt + g * KP + s * 16 + t4 * 2;
#pragma unroll
            for (int j = 0; j < NT; j++) {
                const uint32_t b0 = *(const uint32_t *)(wb + j * 8 * KP);
                const uint32_t b1 = *(const uint32_t *)(wb + j * 8 * KP + 8);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
                asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                             "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                             : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
                             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
                (void)a, (void)b0, (void)b1; /* never launched below sm_80 (kc_conv_small) */
#endif
            }
        }
        kc_cst_tile_out<NT>(acc, sb, r, y, yw, p0, P - p0, act, al, be, lane);
    }
}

/* Shared memory of kc_conv_small_tc_kernel<NT> for KS steps. */
static inline size_t kc_cst_smem(int64_t NT, int64_t KS) {
    return (size_t)(NT * 8 * (KS * 16 + 8) * 2 + KS * 16 * 8 + NT * 8 * 4 +
                    KC_CST_WARPS * 16 * (NT * 8 + 8) * 2);
}

/* Whether kc_conv_small_tc takes x (N,H,W,C) * w (R,S,C,K) -> K channels: float16, one
 * group, K 32 or 64, R*S*C <= 160, on an sm_80+ device, 16-byte aligned w, bias, r, y and
 * 32-bit indices. */
static inline int kc_conv_small_tc_ok(const void *x, const void *w, const void *bias,
                                      const void *r, const void *y, const KcConv2d *p,
                                      int64_t N, int64_t K) {
    int dev = 0, major = 0;
    int64_t rsc = p->R * p->S * p->C;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess)
        return 0;
    return major >= 8 && (K == 32 || K == 64) && rsc <= KC_CST_MAX_KS * 16 &&
           (p->R - 1) * p->dh < 32768 && (p->S - 1) * p->dw < 32768 &&
           kc_small(N * p->OH * p->OW * K) && kc_small(N * p->H * p->W * p->C) &&
           ((uintptr_t)w | (uintptr_t)bias | (uintptr_t)r | (uintptr_t)y) % 16 == 0 &&
           (uintptr_t)x % 2 == 0;
}

static inline int kc_conv_small_tc(cudaStream_t s, const __half *x, const __half *w,
                                   const __half *bias, const __half *r, __half *y,
                                   const KcConv2d *p, int64_t N, int64_t K, int act, float al,
                                   float be) {
    int64_t P = N * p->OH * p->OW, KS = (p->R * p->S * p->C + 15) / 16;
    int64_t tiles = (P + 15) / 16, per = KC_CST_WARPS;
    int64_t blocks = (tiles + per - 1) / per;
    if (P <= 0) return KC_OK;
    if (blocks > 132 * 8) blocks = 132 * 8; /* grid stride past 8 blocks an SM (H100/H200) */
    if (K == 32)
        kc_launch(kc_conv_small_tc_kernel<4>, dim3((unsigned)blocks), dim3(KC_CST_WARPS * KC_WARP),
                  kc_cst_smem(4, KS), s, x, w, bias, r, y, kc_geom<int32_t>(p), (int32_t)P,
                  (int32_t)KS, act, al, be);
    else
        kc_launch(kc_conv_small_tc_kernel<8>, dim3((unsigned)blocks), dim3(KC_CST_WARPS * KC_WARP),
                  kc_cst_smem(8, KS), s, x, w, bias, r, y, kc_geom<int32_t>(p), (int32_t)P,
                  (int32_t)KS, act, al, be);
    KC_LAUNCHED();
    return KC_OK;
}

/* x (N,H,W,C), w (R,S,C,K): one group; KC_ERR_SHAPE unless R*S*C <= 32, K % 8 == 0, the
 * weights fit shared memory, x is 2-byte and the other pointers 16-byte aligned. */
static inline int kc_conv_small(cudaStream_t s, const __half *x, const __half *w,
                                const __half *bias, const __half *r, __half *y,
                                const KcConv2d *p, int64_t N, int64_t K, int act, float al,
                                float be) {
    int64_t P = N * p->OH * p->OW, rsc = p->R * p->S * p->C, rc = (rsc + 7) / 8 * 8;
    if (P <= 0 || K <= 0) return KC_OK;
    if (rsc > 32 || K % 8 || rc * K + K > KC_CS_MAX_FLOATS || !kc_small(P * K) ||
        !kc_small(N * p->H * p->W * p->C) ||
        ((uintptr_t)w | (uintptr_t)bias | (uintptr_t)r | (uintptr_t)y) % 16 ||
        (uintptr_t)x % 2)
        return KC_ERR_SHAPE;
    if (kc_conv_small_tc_ok(x, w, bias, r, y, p, N, K))
        return kc_conv_small_tc(s, x, w, bias, r, y, p, N, K, act, al, be);
    if (rc == 8) kc_conv_small_launch<8>(s, x, w, bias, r, y, p, P, K, act, al, be);
    else if (rc == 16) kc_conv_small_launch<16>(s, x, w, bias, r, y, p, P, K, act, al, be);
    else if (rc == 24) kc_conv_small_launch<24>(s, x, w, bias, r, y, p, P, K, act, al, be);
    else kc_conv_small_launch<32>(s, x, w, bias, r, y, p, P, K, act, al, be);
    KC_LAUNCHED();
    return KC_OK;
}

/* Plain 1x1 convolution (stride 1, no pad) with a short reduction on tensor cores: an
 * expansion of MobileNetV2 such as 16 -> 96 channels at 112x112, where a product of
 * reduction 16 is all store -- 2 bytes of output for each 32 flops -- and cuBLASLt, without
 * a ReLU6 epilogue, writes y, then kc_bias_act reads and writes it again. As P x C @ C x K
 * (P = N*H*W pixels, x rows of C): float16, C even and at most 32 (KS = 1 or 2 steps of 16,
 * zero past C), K in sixteens up to KC_C1_MAX_K; mma.sync m16n8k16 with float32 sums. A warp
 * takes 16 pixels at a time and loads their A fragments once (4-byte pairs of channels
 * straight from x: each input pixel is read once), then walks K in chunks of NB * 8
 * channels: NB products a step from W (transposed, rows of K padded by 8 halves, in shared
 * memory for the block's life), bias, residual and activation on the float32 fragments,
 * staged as float16 in the warp's slice of shared memory and stored as 16-byte vectors (a
 * pixel's chunk is NB whole vectors). On a device below sm_80 the launcher takes
 * kc_conv_small's CUDA-core kernel instead. */
#define KC_C1_WARPS 8
#define KC_C1_MAX_C 32
#define KC_C1_MAX_K 240 /* W in shared memory (K x 40 halves: 19 KB), and within
                           kc_conv_small's (33 x 240 floats) below sm_80 */

template <int KS, int NB, int ACT = -1>
__global__ void __launch_bounds__(KC_C1_WARPS *KC_WARP)
kc_conv1x1_tc_kernel(const __half *__restrict__ x, const __half *__restrict__ w,
                     const __half *__restrict__ bias, const __half *__restrict__ r,
                     __half *__restrict__ y, int32_t P, int32_t C, int32_t K, int act, float al,
                     float be) {
    kc_pdl_enter();
    enum { KP = KS * 16 + 8, YS = NB * 8 + 8 }; /* halves per row of wt, of a staged pixel */
    if (ACT >= 0) act = ACT; /* compiled in: kc_act's switch per element costs what the
                                reduction of at most 32 channels does */
    extern __shared__ __align__(16) unsigned char kc_c1_buf[];
    __half *wt = (__half *)kc_c1_buf;  /* [K][KP]: W transposed */
    float *sb = (float *)(wt + K * KP); /* [K] */
    __half *ys = (__half *)(sb + K);    /* [warps][16][YS] */
    for (int i = threadIdx.x; i < K * KS * 16; i += blockDim.x) {
        int32_t n = i / (KS * 16), k = i % (KS * 16);
        wt[n * KP + k] = k < C ? w[k * K + n] : __float2half(0.0f);
    }
    for (int i = threadIdx.x; i < K; i += blockDim.x)
        sb[i] = bias ? __half2float(bias[i]) : 0.0f;
    __syncthreads();
    const int lane = threadIdx.x % KC_WARP, warp = threadIdx.x / KC_WARP;
    const int g = lane / 4, t4 = lane % 4;
    __half *yw = ys + warp * 16 * YS;
    const int32_t step = gridDim.x * KC_C1_WARPS * 16;
    for (int32_t p0 = (blockIdx.x * KC_C1_WARPS + warp) * 16; p0 < P; p0 += step) {
        const int32_t rows = P - p0 < 16 ? P - p0 : 16;
        uint32_t a[KS][4];
#pragma unroll
        for (int s = 0; s < KS; s++)
#pragma unroll
            for (int h = 0; h < 2; h++) { /* channels 16 s + 8 h + 2 t4 (+1); rows g, g + 8 */
                const int32_t col = s * 16 + h * 8 + t4 * 2;
#pragma unroll
                for (int e = 0; e < 2; e++)
                    a[s][h * 2 + e] = g + 8 * e < rows && col < C
                                          ? *(const uint32_t *)(x + (int64_t)(p0 + g + 8 * e) * C +
                                                                col)
                                          : 0u;
            }
        for (int32_t k0 = 0; k0 < K; k0 += NB * 8) {
            float acc[NB][4];
#pragma unroll
            for (int j = 0; j < NB; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
#pragma unroll
            for (int s = 0; s < KS; s++) {
                const __half *wb = wt + (k0 + g) * KP + s * 16 + t4 * 2;
#pragma unroll
                for (int j = 0; j < NB; j++) {
                    const uint32_t b0 = *(const uint32_t *)(wb + j * 8 * KP);
                    const uint32_t b1 = *(const uint32_t *)(wb + j * 8 * KP + 8);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
                    asm volatile(
                        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                        "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                        : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
                        : "r"(a[s][0]), "r"(a[s][1]), "r"(a[s][2]), "r"(a[s][3]), "r"(b0),
                          "r"(b1));
#else
                    (void)b0, (void)b1; /* never launched below sm_80 (kc_conv1x1_small) */
#endif
                }
            }
#pragma unroll
            for (int j = 0; j < NB; j++) { /* the lane's: pixels g, g + 8, channels 2 t4 (+1) */
                const int col = j * 8 + t4 * 2;
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int row = g + 8 * e;
                    float v0 = acc[j][2 * e] + sb[k0 + col];
                    float v1 = acc[j][2 * e + 1] + sb[k0 + col + 1];
                    if (r && row < rows) {
                        const __half2 rv =
                            *(const __half2 *)(r + (int64_t)(p0 + row) * K + k0 + col);
                        v0 += __low2float(rv), v1 += __high2float(rv);
                    }
                    *(__half2 *)(yw + row * YS + col) =
                        __floats2half2_rn(kc_act(v0, act, al, be), kc_act(v1, act, al, be));
                }
            }
            __syncwarp();
#pragma unroll
            for (int i = lane; i < 16 * NB; i += KC_WARP) { /* 16-byte vectors, pixel-major */
                const int row = i / NB, cv = i % NB;
                if (row < rows)
                    *(uint4 *)(y + (int64_t)(p0 + row) * K + k0 + cv * 8) =
                        *(const uint4 *)(yw + row * YS + cv * 8);
            }
            __syncwarp();
        }
    }
}

/* Shared memory of kc_conv1x1_tc_kernel<KS, NB> for K output channels. */
static inline size_t kc_c1_smem(int64_t KS, int64_t NB, int64_t K) {
    return (size_t)(K * (KS * 16 + 8) * 2 + K * 4 + KC_C1_WARPS * 16 * (NB * 8 + 8) * 2);
}

template <int KS, int NB, int ACT = -1>
static inline int kc_conv1x1_tc_launch(cudaStream_t s, const __half *x, const __half *w,
                                        const __half *bias, const __half *r, __half *y,
                                        int64_t P, int64_t C, int64_t K, int act, float al,
                                        float be) {
    /* as many blocks as are resident at once, then grid stride: no tail of a second wave */
    int64_t tiles = (P + 15) / 16, blocks = (tiles + KC_C1_WARPS - 1) / KC_C1_WARPS;
    const size_t smem = kc_c1_smem(KS, NB, K);
    int dev = 0, sms = 0, per = 0;
    KC_CUDA(cudaGetDevice(&dev));
    KC_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    KC_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kc_conv1x1_tc_kernel<KS, NB, ACT>,
                                                          KC_C1_WARPS * KC_WARP, smem));
    if (per < 1) per = 1;
    if (blocks > (int64_t)sms * per) blocks = (int64_t)sms * per;
    kc_launch(kc_conv1x1_tc_kernel<KS, NB, ACT>, dim3((unsigned)blocks),
              dim3(KC_C1_WARPS * KC_WARP), smem, s, x, w, bias, r, y, (int32_t)P, (int32_t)C,
              (int32_t)K, act, al, be);
    return KC_OK;
}

/* kc_conv1x1_small's chunk width and reduction steps; ACT: the activation compiled in (Clip,
 * the expansions' ReLU6), else -1 (read at run time) */
template <int ACT>
static inline int kc_conv1x1_small_run(cudaStream_t s, const __half *x, const __half *w,
                                       const __half *bias, const __half *r, __half *y,
                                       int64_t P, int64_t C, int64_t K, int act, float al,
                                       float be) {
    const int ks2 = C > 16;
    if (K % 48 == 0 && K >= 192)
        return ks2 ? kc_conv1x1_tc_launch<2, 6, ACT>(s, x, w, bias, r, y, P, C, K, act, al, be)
                   : kc_conv1x1_tc_launch<1, 6, ACT>(s, x, w, bias, r, y, P, C, K, act, al, be);
    return ks2 ? kc_conv1x1_tc_launch<2, 2, ACT>(s, x, w, bias, r, y, P, C, K, act, al, be)
               : kc_conv1x1_tc_launch<1, 2, ACT>(s, x, w, bias, r, y, P, C, K, act, al, be);
}

/* x (N,H,W,C) -> y (N,H,W,K) = act(x @ w + bias + r), w (1,1,C,K): a plain 1x1 convolution
 * (p: R = S = 1, stride 1, no pads); KC_ERR_SHAPE unless C is even and at most KC_C1_MAX_C,
 * K a multiple of 16 up to KC_C1_MAX_K, the pixels fit 32 bits and x is 4-byte, the other
 * pointers 16-byte aligned. Chunks of 16 output channels, of 48 from 192 channels up where
 * K allows: on an H200 at MobileNetV2 fp16 batch 256 (conv_gpu --time) 16 -> 96 took 0.407
 * ms in chunks of 16, 0.420 in 32s, 0.435 in 48s; 24 -> 144 0.161 in 16s, 0.176 in 48s; 32
 * -> 192 0.078 in 16s, 0.075 in 48s. */
static inline int kc_conv1x1_small(cudaStream_t s, const __half *x, const __half *w,
                                   const __half *bias, const __half *r, __half *y,
                                   const KcConv2d *p, int64_t N, int64_t K, int act, float al,
                                   float be) {
    const int64_t P = N * p->H * p->W, C = p->C;
    int dev = 0, major = 0;
    if (P <= 0 || K <= 0) return KC_OK;
    if (p->R != 1 || p->S != 1 || p->sh != 1 || p->sw != 1 || p->ph || p->pw ||
        p->OH != p->H || p->OW != p->W || C % 2 || C > KC_C1_MAX_C || K % 16 ||
        K > KC_C1_MAX_K || !kc_small(P) || (uintptr_t)x % 4 ||
        ((uintptr_t)w | (uintptr_t)bias | (uintptr_t)r | (uintptr_t)y) % 16)
        return KC_ERR_SHAPE;
    KC_CUDA(cudaGetDevice(&dev));
    KC_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    if (major < 8) return kc_conv_small(s, x, w, bias, r, y, p, N, K, act, al, be);
    const int rc =
        act == KC_ACT_CLIP
            ? kc_conv1x1_small_run<KC_ACT_CLIP>(s, x, w, bias, r, y, P, C, K, act, al, be)
            : kc_conv1x1_small_run<-1>(s, x, w, bias, r, y, P, C, K, act, al, be);
    if (rc != KC_OK) return rc;
    KC_LAUNCHED();
    return KC_OK;
}

/* The RGB stem on tensor cores reading the graph input as it comes (sm_80+): x (N,C,H,W)
 * channels-first, float32 or float16 (TI), w (R,S,C,K) -> y (N,OH,OW,K) float16; C at most
 * KC_STEM_MAX_C, K = 8 NT (32 or 64). The Transpose to NHWC and the Cast to float16 before a
 * stem (kc_conv_small_tc's input) are this kernel's load: a block walks output rows (n, oh)
 * and brings each row's input window -- PR = (R-1) dh + 1 rows of PW = (OW-1) sw + (S-1) dw
 * + 1 columns (rounded up to even), zeros outside the image -- into shared memory as
 * float16, read coalesced along W, KC_STEM_BATCH loads a thread in flight, and stored with
 * the channels innermost, as NHWC. The reduction is ordered (r, then s and c together), each
 * kernel row's S*C elements padded to even (SC2; their weights zero), so with dw = 1 the
 * elements of a kernel row are consecutive in the window: an A fragment's pair of elements
 * is one aligned 4-byte load (PAIR, where sw*C is even; else two 2-byte loads), and a warp's
 * loads fall in consecutive words (no bank conflicts but at the rows' seams). Its warps take
 * 32 output pixels each (two m16 tiles sharing each B fragment): mma.sync m16n8k16 with
 * float32 sums, W transposed in shared memory (rows padded by 8 halves), the epilogue and
 * 16-byte stores of whole pixels as kc_conv_small_tc. With PAIR a padded element reads the
 * input beside the window's (times a zero weight): a non-finite value there makes NaN.
 * kc_conv_small_tc's per-lane global gathers (80 two-byte loads a lane per 16 pixels on
 * ResNet-50's 7x7 stem) bounded it at 66 TFLOP/s. */
#define KC_STEM_WARPS 4
#define KC_STEM_MAX_C 4
#define KC_STEM_BATCH 16 /* window elements a thread loads at once */
/* Resident blocks asked of the register allocation (launch bounds): 5 brings 123 registers
 * a thread to 96 (7x7x3 -> 64; no spills) and 4 blocks an SM to 5 (shared memory allows 5:
 * 43 KB each); H200 lab, batch 256: ResNet-50's stem 0.878 -> 0.772 ms, MobileNetV2's 0.326
 * -> 0.299 (6: spills at 64 channels, 0.857). At 4 blocks (25% occupancy) ncu read 9.7 cycles
 * a warp between issues: latency-bound. ACT: the activation compiled in (kc_cst_tile_out);
 * read at run time, kc_act's switch per element was about half the kernel's instructions
 * (ncu, ResNet-50's stem at batch 256: IPC 1.80 -> 2.45, 11.0 -> 7.6 cycles a warp between
 * issues; H200 0.788 -> 0.489 ms, 123 TFLOP/s; MobileNetV2's 0.308 -> 0.183). */
#define KC_STEM_MIN_BLOCKS 5

template <typename TI, int NT, bool PAIR, int MINB, int ACT>
__global__ void __launch_bounds__(KC_STEM_WARPS *KC_WARP, MINB)
kc_stem_tc_kernel(const TI *__restrict__ x, const __half *__restrict__ w,
                  const __half *__restrict__ bias, const __half *__restrict__ r,
                  __half *__restrict__ y, KcGeom<int32_t> p, int32_t rows, int32_t KS,
                  int32_t PR, int32_t PW, int act, float al, float be) {
    kc_pdl_enter();
    enum { K = NT * 8, YS = K + 8 }; /* YS: halves per staged pixel (16-byte rows, banks) */
    extern __shared__ __align__(16) unsigned char kc_stem_buf[];
    const int32_t KP = KS * 16 + 8, SC = p.S * p.C, SC2 = (SC + 1) / 2 * 2;
    const int32_t PS = PR * PW * p.C; /* the window's halves; zeros after it */
    __half *wt = (__half *)kc_stem_buf;          /* [K][KP]: W transposed, (r, s c) order */
    float *sb = (float *)(wt + K * KP);          /* [K] */
    __half *ys = (__half *)(sb + K);             /* [warps][16][YS] */
    int32_t *tab = (int32_t *)(ys + KC_STEM_WARPS * 16 * YS); /* [KS*16]: offset in win */
    __half *win = (__half *)(tab + KS * 16);     /* [PR][PW][C], then PW C + 2 zeros */
    for (int i = threadIdx.x; i < K * KS * 16; i += blockDim.x) {
        int32_t n = i / (KS * 16), k = i % (KS * 16), rr = k / SC2, j = k % SC2;
        wt[n * KP + k] = rr < p.R && j < SC ? w[(rr * SC + j) * K + n] : __float2half(0.0f);
    }
    for (int i = threadIdx.x; i < K; i += blockDim.x)
        sb[i] = bias ? __half2float(bias[i]) : 0.0f;
    for (int k = threadIdx.x; k < KS * 16; k += blockDim.x) {
        int32_t rr = k / SC2, j = k % SC2, c = j % p.C, s = j / p.C;
        tab[k] = rr < p.R && j < SC ? (rr * p.dh * PW + s * p.dw) * p.C + c : PS;
    }
    for (int i = threadIdx.x; i < PW * p.C + 2; i += blockDim.x) win[PS + i] = __float2half(0.0f);
    const int lane = threadIdx.x % KC_WARP, warp = threadIdx.x / KC_WARP;
    const int g = lane / 4, t4 = lane % 4;
    __half *yw = ys + warp * 16 * YS;
    for (int32_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const int32_t n = row / p.OH, ih0 = (row % p.OH) * p.sh - p.ph;
        __syncthreads(); /* the previous row's window is read (and, first, the tables set) */
        /* a warp a window row (c, r) at a time, two rows and 8 columns a lane in flight
         * before any is stored, no division in the loop: one load at a time, each waiting
         * out the memory's latency, or a division or two per element took most of the
         * kernel's time */
        for (int32_t t0 = warp; t0 < p.C * PR; t0 += 2 * KC_STEM_WARPS) {
            const TI *xr[2];
            int32_t wo[2]; /* the window row's first element */
            bool in[2];
#pragma unroll
            for (int q = 0; q < 2; q++) {
                const int32_t t = t0 + q * KC_STEM_WARPS, c = t / PR, rr = t - c * PR;
                in[q] = t < p.C * PR && ih0 + rr >= 0 && ih0 + rr < p.H;
                xr[q] = x + (((int64_t)n * p.C + c) * p.H + (in[q] ? ih0 + rr : 0)) * p.W;
                wo[q] = t < p.C * PR ? rr * PW * p.C + c : -1;
            }
            for (int32_t c0 = 0; c0 < PW; c0 += KC_WARP * KC_STEM_BATCH / 2) {
                float v[2][KC_STEM_BATCH / 2];
#pragma unroll
                for (int q = 0; q < 2; q++)
#pragma unroll
                    for (int u = 0; u < KC_STEM_BATCH / 2; u++) {
                        const int32_t col = c0 + lane + u * KC_WARP, iw = col - p.pw;
                        v[q][u] = in[q] && iw >= 0 && iw < p.W ? (float)xr[q][iw] : 0.0f;
                    }
#pragma unroll
                for (int q = 0; q < 2; q++)
#pragma unroll
                    for (int u = 0; u < KC_STEM_BATCH / 2; u++) {
                        const int32_t col = c0 + lane + u * KC_WARP;
                        if (wo[q] >= 0 && col < PW) win[wo[q] + col * p.C] = __float2half(v[q][u]);
                    }
            }
        }
        __syncthreads();
        for (int32_t t0 = warp * 32; t0 < p.OW; t0 += KC_STEM_WARPS * 32) {
            const bool two = t0 + 16 < p.OW; /* the second m16 tile has pixels (warp-uniform) */
            int32_t po[2][2];                /* the lane's pixels' offsets in the window */
#pragma unroll
            for (int m = 0; m < 2; m++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    int32_t ow = t0 + 16 * m + g + 8 * e;
                    po[m][e] = (ow < p.OW ? ow : p.OW - 1) * p.sw * p.C;
                }
            float acc[2][NT][4];
#pragma unroll
            for (int m = 0; m < 2; m++)
#pragma unroll
                for (int j = 0; j < NT; j++)
                    acc[m][j][0] = acc[m][j][1] = acc[m][j][2] = acc[m][j][3] = 0.0f;
            for (int32_t s = 0; s < KS; s++) {
                uint32_t a[2][4];
#pragma unroll
                for (int h = 0; h < 2; h++) { /* reduction elements 16 s + 8 h + 2 t4 (+1) */
                    if (PAIR) {
                        const int32_t o = tab[s * 16 + h * 8 + t4 * 2];
#pragma unroll
                        for (int m = 0; m < 2; m++)
#pragma unroll
                            for (int e = 0; e < 2; e++)
                                a[m][h * 2 + e] = *(const uint32_t *)(win + o + po[m][e]);
                    } else {
                        const int2 tt = *(const int2 *)(tab + s * 16 + h * 8 + t4 * 2);
#pragma unroll
                        for (int m = 0; m < 2; m++)
#pragma unroll
                            for (int e = 0; e < 2; e++)
                                a[m][h * 2 + e] =
                                    kc_cst_pack(win[tt.x + po[m][e]], win[tt.y + po[m][e]]);
                    }
                }
                const __half *wb = wt + g * KP + s * 16 + t4 * 2;
#pragma unroll
                for (int j = 0; j < NT; j++) {
                    const uint32_t b0 = *(const uint32_t *)(wb + j * 8 * KP);
                    const uint32_t b1 = *(const uint32_t *)(wb + j * 8 * KP + 8);
#pragma unroll
                    for (int m = 0; m < 2; m++) {
                        if (m && !two) break;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
                        asm volatile(
                            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                            "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                            : "+f"(acc[m][j][0]), "+f"(acc[m][j][1]), "+f"(acc[m][j][2]),
                              "+f"(acc[m][j][3])
                            : "r"(a[m][0]), "r"(a[m][1]), "r"(a[m][2]), "r"(a[m][3]), "r"(b0),
                              "r"(b1));
#else
                        (void)a, (void)b0, (void)b1; /* never launched below sm_80 */
#endif
                    }
                }
            }
#pragma unroll
            for (int m = 0; m < 2; m++) {
                if (m && !two) break;
                const int32_t ow0 = t0 + 16 * m;
                kc_cst_tile_out<NT, ACT>(acc[m], sb, r, y, yw, (int64_t)row * p.OW + ow0,
                                         p.OW - ow0, act, al, be, lane);
            }
        }
    }
}

/* The window's rows, its columns (even) and the reduction steps of 16 of kc_stem_tc. */
static inline void kc_stem_window(const KcConv2d *p, int64_t *PR, int64_t *PW, int64_t *KS) {
    *PR = (p->R - 1) * p->dh + 1;
    *PW = ((p->OW - 1) * p->sw + (p->S - 1) * p->dw + 2) / 2 * 2;
    *KS = (p->R * ((p->S * p->C + 1) / 2 * 2) + 15) / 16;
}

/* Shared memory of kc_stem_tc_kernel<.., NT, ..> for geometry p. */
static inline size_t kc_stem_smem(int64_t NT, const KcConv2d *p) {
    int64_t PR, PW, KS;
    kc_stem_window(p, &PR, &PW, &KS);
    return (size_t)(NT * 8 * (KS * 16 + 8) * 2 + NT * 8 * 4 +
                    KC_STEM_WARPS * 16 * (NT * 8 + 8) * 2 + KS * 16 * 4 +
                    ((PR + 1) * PW * p->C + 2) * 2);
}

/* Whether kc_stem_tc takes x (N,C,H,W) * w (R,S,C,K) -> y (N,OH,OW,K): one group, C at most
 * KC_STEM_MAX_C, K 32 or 64, at most KC_CST_MAX_KS steps of 16 (R kernel rows of S*C
 * rounded up to even: 7x7x3 154), a window of at most 64 KB (an output row of about 2000
 * pixels at stride 2), an sm_80+ device, 16-byte aligned w, bias, r, y and 32-bit indices
 * but for x (64-bit offsets). */
static inline int kc_stem_tc_ok(const void *x, const void *w, const void *bias, const void *r,
                                const void *y, const KcConv2d *p, int64_t N, int64_t K) {
    int dev = 0, major = 0;
    int64_t PR, PW, KS;
    (void)x; /* read by elements: its type's alignment is enough */
    kc_stem_window(p, &PR, &PW, &KS);
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess)
        return 0;
    return major >= 8 && (K == 32 || K == 64) && p->C >= 1 && p->C <= KC_STEM_MAX_C &&
           KS <= KC_CST_MAX_KS && p->OW >= 1 && ((PR + 1) * PW * p->C + 2) * 2 <= 64 * 1024 &&
           kc_small(N * p->OH * p->OW * K) &&
           ((uintptr_t)w | (uintptr_t)bias | (uintptr_t)r | (uintptr_t)y) % 16 == 0;
}

template <typename TI, int NT, bool PAIR, int MINB = KC_STEM_MIN_BLOCKS, int ACT = -1>
static inline int kc_stem_tc_launch(cudaStream_t s, const TI *x, const __half *w,
                                    const __half *bias, const __half *r, __half *y,
                                    const KcConv2d *p, int64_t N, int act, float al, float be) {
    static int resident; /* blocks the device holds at once, asked once per form */
    int64_t PR, PW, KS, rows = N * p->OH;
    kc_stem_window(p, &PR, &PW, &KS);
    size_t smem = kc_stem_smem(NT, p);
    if (rows <= 0) return KC_OK;
    KC_CUDA(cudaFuncSetAttribute(kc_stem_tc_kernel<TI, NT, PAIR, MINB, ACT>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    if (!resident) {
        int dev = 0, sms = 0, per = 0;
        KC_CUDA(cudaGetDevice(&dev));
        KC_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        KC_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per, kc_stem_tc_kernel<TI, NT, PAIR, MINB, ACT>, KC_STEM_WARPS * KC_WARP, smem));
        resident = (per > 0 ? per : 1) * (sms > 0 ? sms : 1);
    }
    int64_t blocks = rows < resident ? rows : resident;
    kc_launch(kc_stem_tc_kernel<TI, NT, PAIR, MINB, ACT>, dim3((unsigned)blocks),
              dim3(KC_STEM_WARPS * KC_WARP), smem, s, x, w, bias, r, y, kc_geom<int32_t>(p),
              (int32_t)rows, (int32_t)KS, (int32_t)PR, (int32_t)PW, act, al, be);
    KC_LAUNCHED();
    return KC_OK;
}

/* kc_stem_tc's shapes where its kernel cannot run (a device below sm_80, unaligned
 * pointers): one thread per output element, float32 sums over x (N,C,H,W) as it comes. */
template <typename TI>
__global__ void kc_stem_direct_kernel(const TI *x, const __half *w, const __half *bias,
                                      const __half *r, __half *y, KcConv2d p, int64_t N,
                                      int64_t K, int act, float al, float be) {
    kc_pdl_enter();
    KC_FOR(i, N * p.OH * p.OW * K) {
        int64_t k = i % K, pix = i / K, ow = pix % p.OW, oh = (pix / p.OW) % p.OH;
        int64_t n = pix / (p.OW * p.OH);
        float acc = bias ? __half2float(bias[k]) : 0.0f;
        for (int64_t rr = 0; rr < p.R; rr++) {
            int64_t ih = oh * p.sh - p.ph + rr * p.dh;
            for (int64_t ss = 0; ss < p.S && ih >= 0 && ih < p.H; ss++) {
                int64_t iw = ow * p.sw - p.pw + ss * p.dw;
                if (iw < 0 || iw >= p.W) continue;
                for (int64_t c = 0; c < p.C; c++) { /* the input rounded to float16, as the Cast */
                    const float xv = (float)x[((n * p.C + c) * p.H + ih) * p.W + iw];
                    acc += __half2float(__float2half(xv)) *
                           __half2float(w[((rr * p.S + ss) * p.C + c) * K + k]);
                }
            }
        }
        if (r) acc += __half2float(r[i]);
        y[i] = __float2half(kc_act(acc, act, al, be));
    }
}

/* x (N,C,H,W) float32 or float16 (as the graph input comes), w (R,S,C,K) -> y (N,OH,OW,K)
 * float16: kc_stem_tc where kc_stem_tc_ok holds (the emitter asks for it only where the
 * shape does: an RGB stem into 32 or 64 channels), else the direct kernel above. */
template <typename TI>
static inline int kc_stem_tc(cudaStream_t s, const TI *x, const __half *w, const __half *bias,
                             const __half *r, __half *y, const KcConv2d *p, int64_t N,
                             int64_t K, int act, float al, float be) {
    if (N * p->OH * p->OW <= 0) return KC_OK;
    if (!kc_stem_tc_ok(x, w, bias, r, y, p, N, K)) {
        kc_launch(kc_stem_direct_kernel<TI>, dim3(kc_grid(N * p->OH * p->OW * K)), dim3(KC_THREADS),
                  0, s, x, w, bias, r, y, *p, N, K, act, al, be);
        KC_LAUNCHED();
        return KC_OK;
    }
    /* pairs of elements as 4-byte loads: consecutive (dw 1) and aligned (sw C even), the
     * stems' ReLU (ResNet's) and Clip (MobileNetV2's ReLU6) compiled in */
    const int M = KC_STEM_MIN_BLOCKS;
    if (p->dw == 1 && p->sw * p->C % 2 == 0 && act == KC_ACT_RELU)
        return K == 32 ? kc_stem_tc_launch<TI, 4, true, M, KC_ACT_RELU>(s, x, w, bias, r, y, p, N,
                                                                        act, al, be)
                       : kc_stem_tc_launch<TI, 8, true, M, KC_ACT_RELU>(s, x, w, bias, r, y, p, N,
                                                                        act, al, be);
    if (p->dw == 1 && p->sw * p->C % 2 == 0 && act == KC_ACT_CLIP)
        return K == 32 ? kc_stem_tc_launch<TI, 4, true, M, KC_ACT_CLIP>(s, x, w, bias, r, y, p, N,
                                                                        act, al, be)
                       : kc_stem_tc_launch<TI, 8, true, M, KC_ACT_CLIP>(s, x, w, bias, r, y, p, N,
                                                                        act, al, be);
    if (p->dw == 1 && p->sw * p->C % 2 == 0)
        return K == 32 ? kc_stem_tc_launch<TI, 4, true>(s, x, w, bias, r, y, p, N, act, al, be)
                       : kc_stem_tc_launch<TI, 8, true>(s, x, w, bias, r, y, p, N, act, al, be);
    return K == 32 ? kc_stem_tc_launch<TI, 4, false>(s, x, w, bias, r, y, p, N, act, al, be)
                   : kc_stem_tc_launch<TI, 8, false>(s, x, w, bias, r, y, p, N, act, al, be);
}

/* Pooling NHWC: x (N,H,W,C) -> y (N,OH,OW,C); the window rules of kc_pool_kernel. */
template <typename T, typename I>
__global__ void kc_pool_nhwc_kernel(const T *x, T *y, KcGeom<I> p, I N, int is_max,
                                    int count_pad) {
    kc_pdl_enter();
    I total = N * p.OH * p.OW * p.C;
    KC_FOR(i64, total) {
        I i = (I)i64;
        I c = i % p.C, pix = i / p.C, ow = pix % p.OW, oh = (pix / p.OW) % p.OH;
        I n = pix / (p.OW * p.OH);
        float acc = -INFINITY;
        double sum = 0;
        I cnt = 0, cnt_pad = 0;
        for (I rr = 0; rr < p.R; rr++) {
            I ih = oh * p.sh - p.ph + rr * p.dh;
            for (I ss = 0; ss < p.S; ss++) {
                I iw = ow * p.sw - p.pw + ss * p.dw;
                if (ih < p.H + p.ph && iw < p.W + p.pw) cnt_pad++;
                if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
                float v = (float)x[((n * p.H + ih) * p.W + iw) * p.C + c];
                if (is_max) acc = (v > acc || v != v) ? v : acc;
                else sum += v;
                cnt++;
            }
        }
        if (!is_max) acc = (float)(sum / (double)(count_pad ? cnt_pad : (cnt ? cnt : 1)));
        y[i] = (T)acc;
    }
}

/* Pooling NHWC vectorized over channels (as kc_dwconv_nhwc_vec_kernel): one thread, one
 * output pixel's 16-byte vector of channels; the window rules and sums of
 * kc_pool_nhwc_kernel, per channel. */
template <typename T, typename I>
__global__ void kc_pool_nhwc_vec_kernel(const T *x, T *y, KcGeom<I> p, I N, int is_max,
                                        int count_pad) {
    kc_pdl_enter();
    enum { V = 16 / sizeof(T) };
    typedef KcVec<T> Vec;
    const I CV = p.C / V, total = N * p.OH * p.OW * CV;
    const Vec *xv = (const Vec *)x;
    KC_FOR(i64, total) {
        I i = (I)i64;
        I cv = i % CV, pix = i / CV, ow = pix % p.OW, oh = (pix / p.OW) % p.OH;
        I n = pix / (p.OW * p.OH);
        float mx[V];
        double sum[V];
#pragma unroll
        for (int j = 0; j < V; j++) mx[j] = -INFINITY, sum[j] = 0;
        I cnt = 0, cnt_pad = 0;
        for (I rr = 0; rr < p.R; rr++) {
            I ih = oh * p.sh - p.ph + rr * p.dh;
            for (I ss = 0; ss < p.S; ss++) {
                I iw = ow * p.sw - p.pw + ss * p.dw;
                if (ih < p.H + p.ph && iw < p.W + p.pw) cnt_pad++;
                if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
                Vec a = xv[((n * p.H + ih) * p.W + iw) * CV + cv];
                if (is_max) {
#pragma unroll
                    for (int j = 0; j < V; j++) {
                        float v = (float)a.e[j];
                        mx[j] = (v > mx[j] || v != v) ? v : mx[j];
                    }
                } else {
#pragma unroll
                    for (int j = 0; j < V; j++) sum[j] += (float)a.e[j];
                }
                cnt++;
            }
        }
        Vec o;
        double div = (double)(count_pad ? cnt_pad : (cnt ? cnt : 1));
#pragma unroll
        for (int j = 0; j < V; j++) o.e[j] = (T)(is_max ? mx[j] : (float)(sum[j] / div));
        ((Vec *)y)[i] = o;
    }
}

/* Max pooling NHWC with a window fixed at compile time (KR x KS, ResNet-50's 3x3/2 after
 * its stem), vectorized over channels as kc_pool_nhwc_vec_kernel: the window's KR * KS
 * 16-byte loads of a thread are all issued before the first max (the loop of the kernel
 * above, its bounds read from p, waits out one load's latency a tap). Same window rules and
 * NaN propagation. H200, ResNet-50's pool at batch 256 (411 MB in, 103 MB out): 0.254 ->
 * 0.157 ms, 2.02 -> 3.27 TB/s (ncu: DRAM 69 %, L2 89 %: the taps' re-reads). */
template <typename T, typename I, int KR, int KS>
__global__ void kc_maxpool_nhwc_fixed_kernel(const T *__restrict__ x, T *__restrict__ y,
                                             KcGeom<I> p, I N) {
    kc_pdl_enter();
    enum { V = 16 / sizeof(T) };
    typedef KcVec<T> Vec;
    const I CV = p.C / V, total = N * p.OH * p.OW * CV;
    const Vec *xv = (const Vec *)x;
    KC_FOR(i64, total) {
        I i = (I)i64;
        I cv = i % CV, pix = i / CV, ow = pix % p.OW, oh = (pix / p.OW) % p.OH;
        I n = pix / (p.OW * p.OH);
        const I ih0 = oh * p.sh - p.ph, iw0 = ow * p.sw - p.pw;
        Vec a[KR][KS];
        bool in[KR][KS];
#pragma unroll
        for (int rr = 0; rr < KR; rr++)
#pragma unroll
            for (int ss = 0; ss < KS; ss++) {
                const I ih = ih0 + rr * p.dh, iw = iw0 + ss * p.dw;
                in[rr][ss] = ih >= 0 && ih < p.H && iw >= 0 && iw < p.W;
                if (in[rr][ss]) a[rr][ss] = xv[((n * p.H + ih) * p.W + iw) * CV + cv];
            }
        float mx[V];
#pragma unroll
        for (int j = 0; j < V; j++) mx[j] = -INFINITY;
#pragma unroll
        for (int rr = 0; rr < KR; rr++)
#pragma unroll
            for (int ss = 0; ss < KS; ss++)
                if (in[rr][ss]) {
#pragma unroll
                    for (int j = 0; j < V; j++) {
                        float v = (float)a[rr][ss].e[j];
                        mx[j] = (v > mx[j] || v != v) ? v : mx[j];
                    }
                }
        Vec o;
#pragma unroll
        for (int j = 0; j < V; j++) o.e[j] = (T)mx[j];
        ((Vec *)y)[i] = o;
    }
}

/* Pooling NHWC: vectorized over channels where they come in aligned 16-byte vectors (a 3x3
 * max pool by the fixed-window kernel), else one thread per output. */
template <typename T>
static inline int kc_pool_nhwc(cudaStream_t s, const T *x, T *y, const KcConv2d *p, int64_t N,
                               int is_max, int count_pad) {
    int64_t total = N * p->OH * p->OW * p->C;
    if (total <= 0) return KC_OK;
    int small = kc_small(total) && kc_small(N * p->H * p->W * p->C);
    if (kc_vec_ok<T>(p->C, x, y, NULL, NULL, NULL)) {
        int64_t vt = total / (int64_t)(16 / sizeof(T));
        if (is_max && p->R == 3 && p->S == 3 && small)
            kc_launch(kc_maxpool_nhwc_fixed_kernel<T, int32_t, 3, 3>, dim3(kc_grid(vt)),
                      dim3(KC_THREADS), 0, s, x, y, kc_geom<int32_t>(p), (int32_t)N);
        else if (small)
            kc_launch(kc_pool_nhwc_vec_kernel<T, int32_t>, dim3(kc_grid(vt)), dim3(KC_THREADS), 0,
                      s, x, y, kc_geom<int32_t>(p), (int32_t)N, is_max, count_pad);
        else
            kc_launch(kc_pool_nhwc_vec_kernel<T, int64_t>, dim3(kc_grid(vt)), dim3(KC_THREADS), 0,
                      s, x, y, kc_geom<int64_t>(p), N, is_max, count_pad);
    } else if (small)
        kc_launch(kc_pool_nhwc_kernel<T, int32_t>, dim3(kc_grid(total)), dim3(KC_THREADS), 0, s, x,
                  y, kc_geom<int32_t>(p), (int32_t)N, is_max, count_pad);
    else
        kc_launch(kc_pool_nhwc_kernel<T, int64_t>, dim3(kc_grid(total)), dim3(KC_THREADS), 0, s, x,
                  y, kc_geom<int64_t>(p), N, is_max, count_pad);
    KC_LAUNCHED();
    return KC_OK;
}

/* Global average NHWC: x (N,HW,C) -> y (N,C); one thread per (n, c), consecutive threads
 * consecutive channels (coalesced). */
template <typename T>
__global__ void kc_global_avg_nhwc_kernel(const T *x, T *y, int64_t N, int64_t HW, int64_t C) {
    kc_pdl_enter();
    KC_FOR(i, N * C) {
        int64_t c = i % C, n = i / C;
        double acc = 0;
        for (int64_t j = 0; j < HW; j++) acc += (float)x[(n * HW + j) * C + c];
        y[i] = (T)(float)(acc / (double)HW); /* HW = 0: NaN */
    }
}

template <typename T>
static inline int kc_global_avg_nhwc(cudaStream_t s, const T *x, T *y, int64_t N, int64_t HW,
                                     int64_t C) {
    if (N * C <= 0) return KC_OK;
    kc_launch(kc_global_avg_nhwc_kernel<T>, dim3(kc_grid(N * C)), dim3(KC_THREADS), 0, s, x, y, N,
              HW, C);
    KC_LAUNCHED();
    return KC_OK;
}

/* Depthwise: x: (N,C,H,W), w: (C*mult,1,R,S), b: (C*mult) or NULL, r: like y or NULL,
 * y: (N,C*mult,OH,OW) = act(conv + b + r). p.C is the input channel count. */
template <typename T>
__global__ void kc_dwconv_kernel(const T *x, const T *w, const T *b, const T *r, T *y,
                                 KcConv2d p, int64_t N, int64_t mult, int act, float al,
                                 float be) {
    kc_pdl_enter();
    int64_t K = p.C * mult, total = N * K * p.OH * p.OW;
    KC_FOR(i, total) {
        int64_t ow = i % p.OW, oh = (i / p.OW) % p.OH, k = (i / (p.OW * p.OH)) % K;
        int64_t n = i / (p.OW * p.OH * K), c = k / mult;
        const T *xc = x + (n * p.C + c) * p.H * p.W;
        const T *wk = w + k * p.R * p.S;
        float acc = b ? (float)b[k] : 0.0f;
        for (int64_t rr = 0; rr < p.R; rr++) {
            int64_t ih = oh * p.sh - p.ph + rr * p.dh;
            if (ih < 0 || ih >= p.H) continue;
            for (int64_t ss = 0; ss < p.S; ss++) {
                int64_t iw = ow * p.sw - p.pw + ss * p.dw;
                if (iw >= 0 && iw < p.W) acc += (float)xc[ih * p.W + iw] * (float)wk[rr * p.S + ss];
            }
        }
        if (r) acc += (float)r[i];
        y[i] = (T)kc_act(acc, act, al, be);
    }
}

template <typename T>
static inline int kc_dwconv(cudaStream_t s, const T *x, const T *w, const T *b, const T *r,
                            T *y, const KcConv2d *p, int64_t N, int64_t mult, int act, float al,
                            float be) {
    int64_t total = N * p->C * mult * p->OH * p->OW;
    if (total <= 0) return KC_OK;
    kc_launch(kc_dwconv_kernel<T>, dim3(kc_grid(total)), dim3(KC_THREADS), 0, s, x, w, b, r, y, *p,
              N, mult, act, al, be);
    KC_LAUNCHED();
    return KC_OK;
}

/* x: (NC,H,W) -> y: (NC,OH,OW). is_max; else average over the window, dividing by the
 * window's size when count_pad, else by its part inside the image. */
template <typename T>
__global__ void kc_pool_kernel(const T *x, T *y, KcConv2d p, int64_t NC, int is_max,
                               int count_pad) {
    kc_pdl_enter();
    int64_t total = NC * p.OH * p.OW;
    KC_FOR(i, total) {
        int64_t ow = i % p.OW, oh = (i / p.OW) % p.OH, nc = i / (p.OW * p.OH);
        const T *xc = x + nc * p.H * p.W;
        float acc = -INFINITY;
        double sum = 0;
        int64_t cnt = 0, cnt_pad = 0;
        for (int64_t rr = 0; rr < p.R; rr++) {
            int64_t ih = oh * p.sh - p.ph + rr * p.dh;
            for (int64_t ss = 0; ss < p.S; ss++) {
                int64_t iw = ow * p.sw - p.pw + ss * p.dw;
                /* the padded window ends at the padded image's edge (ceil_mode windows
                 * may reach past it; ONNX Runtime does not count that part) */
                if (ih < p.H + p.ph && iw < p.W + p.pw) cnt_pad++;
                if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
                float v = (float)xc[ih * p.W + iw];
                if (is_max) acc = (v > acc || v != v) ? v : acc;
                else sum += v;
                cnt++;
            }
        }
        if (!is_max) acc = (float)(sum / (double)(count_pad ? cnt_pad : (cnt ? cnt : 1)));
        y[i] = (T)acc;
    }
}

template <typename T>
static inline int kc_pool(cudaStream_t s, const T *x, T *y, const KcConv2d *p, int64_t NC,
                          int is_max, int count_pad) {
    int64_t total = NC * p->OH * p->OW;
    if (total <= 0) return KC_OK;
    kc_launch(kc_pool_kernel<T>, dim3(kc_grid(total)), dim3(KC_THREADS), 0, s, x, y, *p, NC, is_max,
              count_pad);
    KC_LAUNCHED();
    return KC_OK;
}

static __device__ __forceinline__ double kc_warp_sum(double v) {
    for (int o = KC_WARP / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
static __device__ __forceinline__ float kc_warp_max(float v) {
    for (int o = KC_WARP / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

#define KC_ROW_WARPS 8 /* rows (warps) per block of the row kernels */

/* x: (rows, HW) -> y: (rows), the mean of each row. One warp per row. */
template <typename T>
__global__ void kc_row_mean_kernel(const T *x, T *y, int64_t rows, int64_t HW) {
    kc_pdl_enter();
    int64_t row = (int64_t)blockIdx.x * KC_ROW_WARPS + threadIdx.x / KC_WARP;
    int lane = threadIdx.x % KC_WARP;
    if (row >= rows) return;
    double acc = 0;
    for (int64_t j = lane; j < HW; j += KC_WARP) acc += (float)x[row * HW + j];
    acc = kc_warp_sum(acc);
    if (lane == 0) y[row] = (T)(float)(acc / (double)HW); /* HW = 0: NaN */
}

static inline unsigned kc_row_blocks(int64_t rows) {
    return (unsigned)((rows + KC_ROW_WARPS - 1) / KC_ROW_WARPS);
}

template <typename T>
static inline int kc_global_avg(cudaStream_t s, const T *x, T *y, int64_t rows, int64_t HW) {
    if (rows <= 0) return KC_OK;
    kc_launch(kc_row_mean_kernel<T>, dim3(kc_row_blocks(rows)), dim3(KC_ROW_WARPS * KC_WARP), 0, s,
              x, y, rows, HW);
    KC_LAUNCHED();
    return KC_OK;
}

/* x, y: (N,C,HW); y = (x - mean[c]) / sqrt(var[c] + eps) * scale[c] + bias[c]. */
template <typename T>
__global__ void kc_batchnorm_kernel(const T *x, T *y, const T *scale, const T *bias,
                                    const T *mean, const T *var, float eps, int64_t C,
                                    int64_t HW, int64_t total) {
    kc_pdl_enter();
    KC_FOR(i, total) {
        int64_t c = (i / HW) % C;
        float inv = rsqrtf((float)var[c] + eps);
        y[i] = (T)(((float)x[i] - (float)mean[c]) * inv * (float)scale[c] + (float)bias[c]);
    }
}

template <typename T>
static inline int kc_batchnorm(cudaStream_t s, const T *x, T *y, const T *scale, const T *bias,
                               const T *mean, const T *var, float eps, int64_t C, int64_t HW,
                               int64_t total) {
    if (total <= 0) return KC_OK;
    kc_launch(kc_batchnorm_kernel<T>, dim3(kc_grid(total)), dim3(KC_THREADS), 0, s, x, y, scale,
              bias, mean, var, eps, C, HW, total);
    KC_LAUNCHED();
    return KC_OK;
}

/* x, y: (outer, D, inner); softmax (or log-softmax) along D, one warp per (outer, inner)
 * line. */
template <typename T>
__global__ void kc_softmax_kernel(const T *x, T *y, int64_t lines, int64_t D, int64_t inner,
                                  int is_log) {
    kc_pdl_enter();
    int64_t line = (int64_t)blockIdx.x * KC_ROW_WARPS + threadIdx.x / KC_WARP;
    int lane = threadIdx.x % KC_WARP;
    if (line >= lines) return;
    int64_t base = (line / inner) * D * inner + line % inner;
    float mx = -INFINITY;
    double acc = 0;
    for (int64_t j = lane; j < D; j += KC_WARP) mx = fmaxf(mx, (float)x[base + j * inner]);
    mx = kc_warp_max(mx);
    for (int64_t j = lane; j < D; j += KC_WARP) acc += expf((float)x[base + j * inner] - mx);
    float sum = (float)kc_warp_sum(acc);
    float lsum = logf(sum);
    for (int64_t j = lane; j < D; j += KC_WARP) {
        float v = (float)x[base + j * inner] - mx;
        y[base + j * inner] = (T)(is_log ? v - lsum : expf(v) / sum);
    }
}

template <typename T>
static inline int kc_softmax(cudaStream_t s, const T *x, T *y, int64_t outer, int64_t D,
                             int64_t inner, int is_log) {
    int64_t lines = outer * inner;
    if (lines <= 0 || D <= 0) return KC_OK;
    kc_launch(kc_softmax_kernel<T>, dim3(kc_row_blocks(lines)), dim3(KC_ROW_WARPS * KC_WARP), 0, s,
              x, y, lines, D, inner, is_log);
    KC_LAUNCHED();
    return KC_OK;
}

#define KC_NORM_THREADS 256 /* threads of a block of kc_groupnorm: one block per row */

/* The sum of v over the block (blockDim.x = KC_NORM_THREADS), in every thread; sh: shared,
 * KC_NORM_THREADS / KC_WARP + 1 entries, free again on return. */
static __device__ __forceinline__ double kc_block_sum(double v, double *sh) {
    const int warps = KC_NORM_THREADS / KC_WARP, w = threadIdx.x / KC_WARP;
    v = kc_warp_sum(v);
    if (threadIdx.x % KC_WARP == 0) sh[w] = v;
    __syncthreads();
    if (w == 0) {
        v = kc_warp_sum(threadIdx.x < warps ? sh[threadIdx.x] : 0.0);
        if (threadIdx.x == 0) sh[warps] = v;
    }
    __syncthreads();
    v = sh[warps];
    __syncthreads();
    return v;
}

/* GroupNormalization and InstanceNormalization (groups = C): x, y: (N, C, S), statistics per
 * (image, group): a row of C / groups channels x S, contiguous; y = (x - mean) / sqrt(var +
 * eps) * scale[k] + bias[k], k the element's channel (per_channel) or its group. One block
 * per row; two passes for the statistics (float elements, double sums), one to write. */
template <typename T>
__global__ void kc_groupnorm_kernel(const T *x, const T *scale, const T *bias, T *y, int64_t C,
                                    int64_t S, int64_t groups, int per_channel, float eps) {
    kc_pdl_enter();
    __shared__ double sh[KC_NORM_THREADS / KC_WARP + 1];
    const int64_t row = blockIdx.x, g = row % groups, cpg = C / groups, L = cpg * S;
    const T *xr = x + row * L;
    T *yr = y + row * L;
    double sum = 0, sq = 0;
    for (int64_t j = threadIdx.x; j < L; j += KC_NORM_THREADS) sum += (float)xr[j];
    const float mean = (float)(kc_block_sum(sum, sh) / (double)L);
    for (int64_t j = threadIdx.x; j < L; j += KC_NORM_THREADS) {
        float d = (float)xr[j] - mean;
        sq += d * d;
    }
    const float inv = rsqrtf((float)(kc_block_sum(sq, sh) / (double)L) + eps);
    for (int64_t j = threadIdx.x; j < L; j += KC_NORM_THREADS) {
        int64_t k = per_channel ? g * cpg + j / S : g;
        yr[j] = (T)(((float)xr[j] - mean) * inv * (float)scale[k] + (float)bias[k]);
    }
}

template <typename T>
static inline int kc_groupnorm(cudaStream_t s, const T *x, const T *scale, const T *bias, T *y,
                               int64_t N, int64_t C, int64_t S, int64_t groups, int per_channel,
                               float eps) {
    if (N * groups <= 0 || C * S <= 0) return KC_OK;
    kc_launch(kc_groupnorm_kernel<T>, dim3((unsigned)(N * groups)), dim3(KC_NORM_THREADS), 0, s, x,
              scale, bias, y, C, S, groups, per_channel, eps);
    KC_LAUNCHED();
    return KC_OK;
}

/* ---- layer normalization ----
 * y = (x - mean) / sqrt(var + eps) * scale + bias per row of D; x the row itself, or a + b
 * (kc_add_layernorm: an Add whose sum only the normalization reads, the sum never stored; it
 * is rounded to T first, as the unfused Add stores it). scale, bias: (D) (bias optional);
 * mean, inv_std: (rows) or NULL.
 * Rows of up to KC_LN_MAX elements: one warp per row, the row in registers, read whole before
 * the first store (y may be a or b itself). A lane holds N chunks of E elements, chunk r at
 * element (lane + 32 r) E: with E = 16 / sizeof(T) (every row and scale and bias on 16 bytes)
 * each load and store moves 16 bytes, and nothing else touches memory: the floor is the
 * rows' bytes (BERT-base fp16 b256: 32768 rows x 768 x (2 reads + 1 write) x 2 B = 151 MB a
 * call, ~32 us at 4.8 TB/s); scale and bias are re-read from L1/L2. Sums in float: the row
 * is in registers, so the variance is a second pass over (v - mean)^2 (no cancellation of
 * E[v^2] - mean^2), and a lane adds at most 32 values before the warp's 5-step tree: a few
 * float ulps of error, far inside both precisions' tolerances.
 * Longer rows (kc_layernorm only): kc_layernorm_kernel, two passes over memory with double
 * sums, as the rows can be any length there. */
#define KC_LN_MAX 1024 /* the longest row held in registers: 32 floats a lane */
#ifndef KC_LN_WARPS /* (a kernel lab may time others) */
#define KC_LN_WARPS 4 /* rows (warps) per block: small blocks, so the last wave is short */
#endif

static __device__ __forceinline__ float kc_warp_sumf(float v) {
    for (int o = KC_WARP / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* f[0..E) = p[0..E) as floats: one 16-byte load where E elements are 16 bytes */
template <typename T, int E>
static __device__ __forceinline__ void kc_ln_load(float f[E], const T *p) {
    if (E * sizeof(T) == 16) {
        __align__(16) T h[E];
        *reinterpret_cast<uint4 *>(h) = *reinterpret_cast<const uint4 *>(p);
#pragma unroll
        for (int e = 0; e < E; e++) f[e] = (float)h[e];
    } else {
#pragma unroll
        for (int e = 0; e < E; e++) f[e] = (float)p[e];
    }
}

/* a: (rows, D), b: (rows, D) when ADD (else unread); E, N as above, D <= 32 N E */
template <typename T, int E, int N, bool ADD>
__global__ void __launch_bounds__(KC_LN_WARPS * KC_WARP)
kc_ln_rows_kernel(const T *a, const T *b, const T *scale, const T *bias, T *y, T *mean_out,
                  T *inv_out, int64_t rows, int D, float eps) {
    kc_pdl_wait(); /* launched by kc_launch_pdl: a and b may be the previous kernel's */
    const int64_t row = (int64_t)blockIdx.x * KC_LN_WARPS + threadIdx.x / KC_WARP;
    const int lane = threadIdx.x % KC_WARP;
    if (row >= rows) return;
    const T *ar = a + row * D, *br = ADD ? b + row * D : a;
    float v[N][E];
    float sum = 0.0f;
#pragma unroll
    for (int r = 0; r < N; r++) {
        const int j = (lane + r * KC_WARP) * E;
        if (j < D) {
            kc_ln_load<T, E>(v[r], ar + j);
            if (ADD) {
                float w[E];
                kc_ln_load<T, E>(w, br + j);
#pragma unroll
                for (int e = 0; e < E; e++) v[r][e] = (float)(T)(v[r][e] + w[e]);
            }
        } else {
#pragma unroll
            for (int e = 0; e < E; e++) v[r][e] = 0.0f;
        }
#pragma unroll
        for (int e = 0; e < E; e++) sum += v[r][e];
    }
    const float mean = kc_warp_sumf(sum) / (float)D;
    float sq = 0.0f;
#pragma unroll
    for (int r = 0; r < N; r++)
        if ((lane + r * KC_WARP) * E < D)
#pragma unroll
            for (int e = 0; e < E; e++) {
                float d = v[r][e] - mean;
                sq += d * d;
            }
    const float inv = rsqrtf(kc_warp_sumf(sq) / (float)D + eps);
#pragma unroll
    for (int r = 0; r < N; r++) {
        const int j = (lane + r * KC_WARP) * E;
        if (j >= D) continue;
        float g[E], c[E];
        kc_ln_load<T, E>(g, scale + j);
        if (bias) kc_ln_load<T, E>(c, bias + j);
        __align__(16) T out[E];
#pragma unroll
        for (int e = 0; e < E; e++) {
            float o = (v[r][e] - mean) * inv * g[e];
            out[e] = (T)(bias ? o + c[e] : o);
        }
        if (E * sizeof(T) == 16)
            *reinterpret_cast<uint4 *>(y + row * D + j) = *reinterpret_cast<const uint4 *>(out);
        else
#pragma unroll
            for (int e = 0; e < E; e++) y[row * D + j + e] = out[e];
    }
    if (lane == 0 && mean_out) mean_out[row] = (T)mean;
    if (lane == 0 && inv_out) inv_out[row] = (T)inv;
}

/* Launches kc_ln_rows_kernel<T, E, n, ADD> for the chunk count n <= N a row needs: one
 * instance per count, so a lane's registers hold exactly its share of the row (D 768: 3
 * chunks in float16, 6 in float32). */
template <typename T, int E, int N, bool ADD>
struct KcLnRows {
    static void launch(cudaStream_t s, int n, const T *a, const T *b, const T *scale,
                       const T *bias, T *y, T *mean, T *inv, int64_t rows, int D, float eps) {
        if (n < N) {
            KcLnRows<T, E, N - 1, ADD>::launch(s, n, a, b, scale, bias, y, mean, inv, rows, D,
                                               eps);
            return;
        }
        kc_launch_pdl(kc_ln_rows_kernel<T, E, N, ADD>,
                      dim3((unsigned)((rows + KC_LN_WARPS - 1) / KC_LN_WARPS)),
                      dim3(KC_LN_WARPS * KC_WARP), s, a, b, scale, bias, y, mean, inv, rows, D,
                      eps);
    }
};
template <typename T, int E, bool ADD>
struct KcLnRows<T, E, 0, ADD> {
    static void launch(cudaStream_t, int, const T *, const T *, const T *, const T *, T *, T *,
                       T *, int64_t, int, float) {}
};

/* The row-in-registers kernel for D <= KC_LN_MAX: 16-byte chunks where D and every pointer
 * allow, else single elements (32 a lane). */
template <typename T, bool ADD>
static inline void kc_ln_rows(cudaStream_t s, const T *a, const T *b, const T *scale,
                              const T *bias, T *y, T *mean, T *inv, int64_t rows, int D,
                              float eps) {
    const int E = 16 / sizeof(T);
    uintptr_t bits = (uintptr_t)a | (uintptr_t)scale | (uintptr_t)bias | (uintptr_t)y |
                     (ADD ? (uintptr_t)b : 0);
    if (D % E == 0 && (bits & 15) == 0)
        KcLnRows<T, E, KC_LN_MAX / (KC_WARP * E), ADD>::launch(
            s, (D + KC_WARP * E - 1) / (KC_WARP * E), a, b, scale, bias, y, mean, inv, rows, D,
            eps);
    else
        kc_launch_pdl(kc_ln_rows_kernel<T, 1, KC_LN_MAX / KC_WARP, ADD>,
                      dim3((unsigned)((rows + KC_LN_WARPS - 1) / KC_LN_WARPS)),
                      dim3(KC_LN_WARPS * KC_WARP), s, a, b, scale, bias, y, mean, inv, rows, D,
                      eps);
}

/* Rows longer than KC_LN_MAX: one warp per row, two passes over memory for the statistics. */
template <typename T>
__global__ void kc_layernorm_kernel(const T *x, const T *scale, const T *bias, T *y, T *mean_out,
                                    T *inv_out, int64_t rows, int64_t D, float eps) {
    kc_pdl_enter();
    int64_t row = (int64_t)blockIdx.x * KC_ROW_WARPS + threadIdx.x / KC_WARP;
    int lane = threadIdx.x % KC_WARP;
    if (row >= rows) return;
    const T *xr = x + row * D;
    double sum = 0, sq = 0;
    for (int64_t j = lane; j < D; j += KC_WARP) sum += (float)xr[j];
    float mean = (float)(kc_warp_sum(sum) / (double)D);
    for (int64_t j = lane; j < D; j += KC_WARP) {
        float d = (float)xr[j] - mean;
        sq += d * d;
    }
    float inv = rsqrtf((float)(kc_warp_sum(sq) / (double)D) + eps);
    for (int64_t j = lane; j < D; j += KC_WARP) {
        float v = ((float)xr[j] - mean) * inv * (float)scale[j];
        y[row * D + j] = (T)(bias ? v + (float)bias[j] : v);
    }
    if (lane == 0 && mean_out) mean_out[row] = (T)mean;
    if (lane == 0 && inv_out) inv_out[row] = (T)inv;
}

template <typename T>
static inline int kc_layernorm(cudaStream_t s, const T *x, const T *scale, const T *bias, T *y,
                               T *mean, T *inv, int64_t rows, int64_t D, float eps) {
    if (rows <= 0 || D <= 0) return KC_OK;
    if (D <= KC_LN_MAX)
        kc_ln_rows<T, false>(s, x, (const T *)NULL, scale, bias, y, mean, inv, rows, (int)D,
                             eps);
    else
        kc_launch(kc_layernorm_kernel<T>, dim3(kc_row_blocks(rows)), dim3(KC_ROW_WARPS * KC_WARP),
                  0, s, x, scale, bias, y, mean, inv, rows, D, eps);
    KC_LAUNCHED();
    return KC_OK;
}

template <typename T>
static inline int kc_add_layernorm(cudaStream_t s, const T *a, const T *b, const T *scale,
                                   const T *bias, T *y, int64_t rows, int64_t D, float eps) {
    if (rows <= 0 || D <= 0) return KC_OK;
    if (D > KC_LN_MAX) return KC_ERR_SHAPE; /* the emitter never asks */
    kc_ln_rows<T, true>(s, a, b, scale, bias, y, (T *)NULL, (T *)NULL, rows, (int)D, eps);
    KC_LAUNCHED();
    return KC_OK;
}

#endif
