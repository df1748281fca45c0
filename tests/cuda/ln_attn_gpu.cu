/* ln_attn_gpu.cu: the layer-normalization kernels (kc_layernorm, kc_add_layernorm of
 * kc_nn.cuh) and the attention kernels (kc_attention of kc_attn.cuh) against a double
 * reference on the host, on a GPU: fresh random inputs, outputs poisoned (NaN) before each
 * run, shapes that take every path (16-byte chunks with full and partial lanes, single
 * elements, rows past the register limit, misaligned rows; tensor-core attention with
 * head sizes in odd and even numbers of 16, partial key tiles, masks shared by all query
 * rows (copied with the key tiles where aligned, else loaded) and per-row masks, blocks of
 * 1, 4 and 8 warps and of 2 warps splitting the keys, Q/K/V read from a packed (B, S, 3, H,
 * D) tensor as BERT's fused projection leaves it, and inputs written by the kernel launched
 * just before, which lets its dependents start early (programmatic dependent launch: the
 * kernels must wait for it); the float kernels -- kc_attn_rt's register tiles of 16, 32 and
 * 64 rows up to head size 64, kc_attn_tile above it -- in float32 and float16 with head sizes
 * in partial quads, D != DV, strided and misaligned operands, rows of -inf only). With
 * --time also times the kernels at BERT-base fp16 batch 256 and batch 1's attention (one
 * warp against the key split), and the float32 attention at batch 1,
 * 32 and 256 (CUDA events, median of 20; the launcher's choice, each register-tile size and
 * kc_attn_tile): compiled against another runtime folder (-I), the same source times an
 * older version (define KC_LAB_OLD there: no NW = 8 variant, no kc_attn_rt).
 * usage: nvcc -O3 -arch=sm_90 -I runtime/cuda tests/cuda/ln_attn_gpu.cu -o ln_attn_gpu
 *        ./ln_attn_gpu [--time]; ends with "N passed, N failed". */
#include <algorithm>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "gpu_test.h"
#include "gpu_values.h"
#include "kc_attn.cuh"
#include "kc_nn.cuh"

/* host values rounded to T, and a device copy at element offset off (misalignment) */
template <typename T>
struct Buf {
    std::vector<double> h; /* the values as T holds them */
    T *base = NULL, *d = NULL;
    size_t n;
    Buf(size_t n_, double scale, int off = 0) : h(n_), n(n_) {
        std::vector<T> t(n_);
        for (size_t i = 0; i < n_; i++) t[i] = to_t<T>(nrand() * scale), h[i] = from_t(t[i]);
        CK(cudaMalloc(&base, (n_ + 8) * sizeof(T)));
        d = base + off;
        CK(cudaMemcpy(d, t.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
    }
    void poison() { CK(cudaMemset(d, 0xff, n * sizeof(T))); } /* NaN in both types */
    std::vector<double> get() const {
        std::vector<T> t(n);
        CK(cudaMemcpy(t.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
        std::vector<double> r(n);
        for (size_t i = 0; i < n; i++) r[i] = from_t(t[i]);
        return r;
    }
    ~Buf() { cudaFree(base); }
};

/* late: a and b written by the kernel just before (LateInputs of gpu_test.h) */
template <typename T>
static void ln_case(const char *tname, int64_t rows, int64_t D, bool add, bool bias, int off,
                    double tol, bool late = false) {
    Buf<T> a(rows * D, 1.5, off), b(rows * D, 1.0, off), g(D, 1.0), c(D, 0.5),
        y(rows * D, 1.0, off), mean(rows, 1.0), inv(rows, 1.0);
    y.poison(), mean.poison(), inv.poison();
    LateInputs li(late, a.d, a.n * sizeof(T), add ? b.d : NULL, add ? b.n * sizeof(T) : 0);
    const cudaStream_t s = li.s;
    int st = add ? kc_add_layernorm<T>(s, a.d, b.d, g.d, bias ? c.d : NULL, y.d, rows, D, 1e-5f)
                 : kc_layernorm<T>(s, a.d, g.d, bias ? c.d : NULL, y.d, mean.d, inv.d, rows, D,
                                   1e-5f);
    CK(cudaDeviceSynchronize());
    std::vector<double> want(rows * D), wm(rows), wi(rows);
    for (int64_t r = 0; r < rows; r++) {
        std::vector<double> v(D);
        double s = 0, q = 0;
        for (int64_t j = 0; j < D; j++) {
            double x = a.h[r * D + j];
            if (add) x = from_t(to_t<T>(x + b.h[r * D + j])); /* the Add's sum, in T */
            v[j] = x, s += x;
        }
        double m = s / D;
        for (int64_t j = 0; j < D; j++) q += (v[j] - m) * (v[j] - m);
        double iv = 1.0 / sqrt(q / D + 1e-5);
        for (int64_t j = 0; j < D; j++)
            want[r * D + j] = (v[j] - m) * iv * g.h[j] + (bias ? c.h[j] : 0.0);
        wm[r] = m, wi[r] = iv;
    }
    double worst = 0;
    long bad = 0;
    gpu_compare(y.get(), want, &worst, &bad, tol);
    if (!add)
        gpu_compare(mean.get(), wm, &worst, &bad, tol), gpu_compare(inv.get(), wi, &worst, &bad, tol);
    char what[160];
    snprintf(what, sizeof what, "%s %s rows %lld D %lld%s%s%s",
             add ? "add_layernorm" : "layernorm", tname, (long long)rows, (long long)D,
             bias ? "" : " no bias", off ? " misaligned" : "",
             late ? " inputs written by the kernel before" : "");
    if (st != KC_OK) bad++;
    gpu_report(what, worst, tol, bad);
}

/* Attention on Q, K, V windows of a packed (B, S, 3, H, D) tensor, as BERT's fused
 * projection leaves it; mask: 0 none, 1 (B, 1, 1, S) shared by the query rows, 2 (B, H, S, S) */
template <int D>
static void attn_case(int64_t B, int64_t H, int64_t S, int mask_kind, int nw = 0,
                      bool late = false) {
    Buf<__half> qkv(B * S * 3 * H * D, 1.0), y(B * H * S * D, 1.0);
    int64_t mn = mask_kind == 1 ? B * S : mask_kind == 2 ? B * H * S * S : 1;
    Buf<__half> m(mn, 1.0);
    std::vector<__half> mh(mn);
    for (int64_t i = 0; i < mn; i++) { /* a few keys masked off, the rest small offsets */
        double v = urand() < 0.2 ? -10000.0 : 0.5 * nrand();
        mh[i] = to_t<__half>(v), m.h[i] = from_t(mh[i]);
    }
    CK(cudaMemcpy(m.d, mh.data(), mn * sizeof(__half), cudaMemcpyHostToDevice));
    y.poison();
    KcAttn p;
    memset(&p, 0, sizeof p);
    p.b = B, p.h = H, p.sq = S, p.sk = S, p.d = D, p.dv = D;
    int64_t st[4] = {S * 3 * H * D, D, 3 * H * D, 1};
    for (int i = 0; i < 4; i++) p.q_st[i] = p.k_st[i] = p.v_st[i] = st[i];
    int64_t yst[4] = {H * S * D, S * D, D, 1};
    memcpy(p.y_st, yst, sizeof yst);
    if (mask_kind == 1) p.m_st[0] = S, p.m_st[3] = 1;
    if (mask_kind == 2) p.m_st[0] = H * S * S, p.m_st[1] = S * S, p.m_st[2] = S, p.m_st[3] = 1;
    p.scale = (float)(1.0 / sqrt((double)D));
    const __half *q = qkv.d, *k = qkv.d + H * D, *v = qkv.d + 2 * H * D;
    int rc = KC_OK;
    const __half *mp = mask_kind ? m.d : NULL;
    /* Q, K, V written by the kernel before, as the product */
    LateInputs li(late, qkv.d, qkv.n * sizeof(__half));
#ifndef KC_LAB_OLD
    if (nw == 8) /* the kernel alone, 8 warps (128 query rows) a block */
        kc_attn_tc_kernel<D, 8><<<dim3((unsigned)((S + 127) / 128), (unsigned)(B * H)), 256>>>(
            q, k, v, mp, y.d, p);
    else if (nw == 4) /* 4 warps: what the launcher picks for many heads (BERT b32, b256) */
        kc_attn_tc_kernel<D, 4><<<dim3((unsigned)((S + 63) / 64), (unsigned)(B * H)), 128>>>(
            q, k, v, mp, y.d, p);
    else if (nw == 1) /* 1 warp walking all the keys (the launcher's for one key tile) */
        kc_attn_tc_kernel<D, 1><<<dim3((unsigned)((S + 15) / 16), (unsigned)(B * H)), 32>>>(
            q, k, v, mp, y.d, p);
    else
#endif
        rc = kc_attention<__half, true, D, D>(li.s, q, k, v, mp, y.d, &p);
    CK(cudaDeviceSynchronize());
    std::vector<double> want(B * H * S * D);
    std::vector<double> sc(S);
    for (int64_t bb = 0; bb < B; bb++)
        for (int64_t hh = 0; hh < H; hh++)
            for (int64_t i = 0; i < S; i++) {
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < S; j++) {
                    double s = 0;
                    for (int t = 0; t < D; t++)
                        s += qkv.h[bb * st[0] + hh * D + i * st[2] + t] *
                             qkv.h[bb * st[0] + H * D + hh * D + j * st[2] + t];
                    s *= p.scale;
                    if (mask_kind == 1) s += m.h[bb * S + j];
                    if (mask_kind == 2) s += m.h[((bb * H + hh) * S + i) * S + j];
                    sc[j] = s, mx = std::max(mx, s);
                }
                for (int64_t j = 0; j < S; j++) sc[j] = exp(sc[j] - mx), sum += sc[j];
                for (int t = 0; t < D; t++) {
                    double o = 0;
                    for (int64_t j = 0; j < S; j++)
                        o += sc[j] * qkv.h[bb * st[0] + 2 * H * D + hh * D + j * st[2] + t];
                    want[((bb * H + hh) * S + i) * D + t] = o / sum;
                }
            }
    double worst = 0;
    long bad = 0;
    gpu_compare(y.get(), want, &worst, &bad, 1e-2); /* probabilities rounded to fp16 */
    if (rc != KC_OK) bad++;
    char what[160];
    snprintf(what, sizeof what, "attention fp16 tc B %lld H %lld S %lld D %d mask %s%s%s",
             (long long)B, (long long)H, (long long)S, D,
             mask_kind == 0 ? "none" : mask_kind == 1 ? "(B,1,1,S)" : "(B,H,S,S)",
             nw == 8 ? " NW 8" : nw == 4 ? " NW 4" : nw == 1 ? " NW 1" : "",
             late ? " Q/K/V written by the kernel before" : "");
    gpu_report(what, worst, 1e-2, bad);
}

/* The tiled kernel (float32 and float16 without tensor cores): Q read as (B, Sq, H, D) with
 * element stride qs (2: every other element, no 16-byte loads), K (B, H, Sk, D), V
 * (B, Sk, H, DV), y (B, Sq, H, DV), base pointers off 16 bytes where off; mask as in
 * attn_case, 3: a (B, 1, 1, Sk) mask whose first row is all -inf (NaN rows, as the unfused
 * softmax). D, DV: any sizes up to KC_ATTN_MAX_D (quads with a partial last one, V padding). */
template <typename T, int D, int DV>
static void attn_tile_case(const char *tname, int64_t B, int64_t H, int64_t Sq, int64_t Sk,
                           int mask_kind, int qs, int off, double tol) {
    Buf<T> qb(B * Sq * H * D * qs, 1.0, off), kb(B * H * Sk * D, 1.0, off),
        vb(B * Sk * H * DV, 1.0, off), y(B * Sq * H * DV, 1.0, off);
    int64_t mn = mask_kind == 2 ? B * H * Sq * Sk : mask_kind ? B * Sk : 1;
    Buf<T> m(mn, 1.0);
    std::vector<T> mh(mn);
    for (int64_t i = 0; i < mn; i++) {
        double v = urand() < 0.2 ? -10000.0 : 0.5 * nrand();
        if (mask_kind == 3 && i < Sk) v = -INFINITY;
        mh[i] = to_t<T>(v), m.h[i] = from_t(mh[i]);
    }
    CK(cudaMemcpy(m.d, mh.data(), mn * sizeof(T), cudaMemcpyHostToDevice));
    y.poison();
    KcAttn p;
    memset(&p, 0, sizeof p);
    p.b = B, p.h = H, p.sq = Sq, p.sk = Sk, p.d = D, p.dv = DV;
    int64_t qst[4] = {Sq * H * D * qs, D * qs, H * D * qs, qs}, kst[4] = {H * Sk * D, Sk * D, D, 1},
            vst[4] = {Sk * H * DV, DV, H * DV, 1}, yst[4] = {Sq * H * DV, DV, H * DV, 1};
    memcpy(p.q_st, qst, sizeof qst), memcpy(p.k_st, kst, sizeof kst);
    memcpy(p.v_st, vst, sizeof vst), memcpy(p.y_st, yst, sizeof yst);
    if (mask_kind == 1 || mask_kind == 3) p.m_st[0] = Sk, p.m_st[3] = 1;
    if (mask_kind == 2) p.m_st[0] = H * Sq * Sk, p.m_st[1] = Sq * Sk, p.m_st[2] = Sk, p.m_st[3] = 1;
    p.scale = (float)(1.0 / sqrt((double)D));
    int rc = kc_attention<T, false, D, DV>(0, qb.d, kb.d, vb.d, mask_kind ? m.d : NULL, y.d, &p);
    CK(cudaDeviceSynchronize());
    std::vector<double> want(B * Sq * H * DV), sc(Sk);
    for (int64_t bb = 0; bb < B; bb++)
        for (int64_t hh = 0; hh < H; hh++)
            for (int64_t i = 0; i < Sq; i++) {
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < Sk; j++) {
                    double s = 0;
                    for (int t = 0; t < D; t++)
                        s += qb.h[bb * qst[0] + hh * qst[1] + i * qst[2] + t * qs] *
                             kb.h[bb * kst[0] + hh * kst[1] + j * kst[2] + t];
                    s *= p.scale;
                    if (mask_kind == 1 || mask_kind == 3) s += m.h[bb * Sk + j];
                    if (mask_kind == 2) s += m.h[((bb * H + hh) * Sq + i) * Sk + j];
                    sc[j] = s, mx = std::max(mx, s);
                }
                for (int64_t j = 0; j < Sk; j++) sc[j] = exp(sc[j] - mx), sum += sc[j];
                for (int t = 0; t < DV; t++) {
                    double o = 0;
                    for (int64_t j = 0; j < Sk; j++)
                        o += sc[j] * vb.h[bb * vst[0] + hh * vst[1] + j * vst[2] + t];
                    want[bb * yst[0] + hh * yst[1] + i * yst[2] + t] =
                        mx == -INFINITY ? NAN : o / sum;
                }
            }
    std::vector<double> got = y.get();
    long bad = 0;
    double worst = 0;
    for (size_t e = 0; e < want.size(); e++) { /* NaN where the row is all -inf, else close */
        if (want[e] != want[e]) {
            if (got[e] == got[e]) bad++;
            got[e] = want[e] = 0.0;
        }
    }
    gpu_compare(got, want, &worst, &bad, tol);
    if (rc != KC_OK) bad++;
    char what[200];
    snprintf(what, sizeof what,
             "attention %s tile B %lld H %lld Sq %lld Sk %lld D %d DV %d mask %d%s%s", tname,
             (long long)B, (long long)H, (long long)Sq, (long long)Sk, D, DV, mask_kind,
             qs > 1 ? " Q strided" : "", off ? " misaligned" : "");
    gpu_report(what, worst, tol, bad);
}

/* ---- timing at BERT-base fp16 batch 256 ---- */

static void timing(void) {
    const int64_t B = 256, S = 128, H = 12, D = 64, rows = B * S, E = 768;
    Buf<__half> a(rows * E, 1.0), b(rows * E, 1.0), g(E, 1.0), c(E, 1.0), y(rows * E, 1.0);
    float ms = time_ms([&] { kc_add_layernorm<__half>(0, a.d, b.d, g.d, c.d, y.d, rows, E, 1e-12f); });
    printf("time add_layernorm fp16 32768x768: %.4f ms, %.0f GB/s\n", ms,
           3.0 * rows * E * 2 / ms / 1e6);
    ms = time_ms([&] { kc_layernorm<__half>(0, a.d, g.d, c.d, y.d, NULL, NULL, rows, E, 1e-12f); });
    printf("time layernorm fp16 32768x768: %.4f ms, %.0f GB/s\n", ms, 2.0 * rows * E * 2 / ms / 1e6);
    Buf<__half> qkv(B * S * 3 * H * D, 1.0), yo(B * H * S * D, 1.0), m(B * S, 0.0);
    KcAttn p;
    memset(&p, 0, sizeof p);
    p.b = B, p.h = H, p.sq = S, p.sk = S, p.d = D, p.dv = D;
    int64_t st[4] = {S * 3 * H * D, D, 3 * H * D, 1}, yst[4] = {S * H * D, D, H * D, 1};
    for (int i = 0; i < 4; i++) p.q_st[i] = p.k_st[i] = p.v_st[i] = st[i], p.y_st[i] = yst[i];
    p.m_st[0] = S, p.m_st[3] = 1;
    p.scale = 0.125f;
    const __half *q = qkv.d, *k = qkv.d + H * D, *v = qkv.d + 2 * H * D;
    double flop = 4.0 * B * H * S * S * D;
    ms = time_ms([&] { kc_attention<__half, true, 64, 64>(0, q, k, v, m.d, yo.d, &p); });
    printf("time attention fp16 b256 h12 s128 d64 (launcher): %.4f ms, %.0f TFLOP/s\n", ms,
           flop / ms / 1e9);
    ms = time_ms([&] {
        kc_attn_tc_kernel<64, 4><<<dim3(2, B * H), 128>>>(q, k, v, m.d, yo.d, p);
    });
    printf("time attention NW 4: %.4f ms\n", ms);
#ifndef KC_LAB_OLD
    ms = time_ms([&] {
        kc_attn_tc_kernel<64, 8><<<dim3(1, B * H), 256>>>(q, k, v, m.d, yo.d, p);
    });
    printf("time attention NW 8: %.4f ms\n", ms);
#endif
    ms = time_ms([&] {
        kc_attn_tc_kernel<64, 4><<<dim3(2, B * H), 128>>>(q, k, v, NULL, yo.d, p);
    });
    printf("time attention NW 4, no mask: %.4f ms\n", ms);
    { /* fp16 at BERT-base batch 1 (12 heads): one warp a block walking the 128 keys
       * against two warps splitting them (the launcher's); 100 launches back to back */
        KcAttn p1 = p;
        p1.b = 1;
        ms = time_ms([&] {
            for (int i = 0; i < 100; i++)
                kc_attn_tc_kernel<64, 1><<<dim3(8, H), 32>>>(q, k, v, m.d, yo.d, p1);
        });
        printf("time attention fp16 b1 h12 s128 d64, NW 1: %.5f ms a launch\n", ms / 100);
        ms = time_ms([&] {
            for (int i = 0; i < 100; i++)
                kc_attn_tc_kernel<64, 2, true><<<dim3(8, H), 64>>>(q, k, v, m.d, yo.d, p1);
        });
        printf("time attention fp16 b1 h12 s128 d64, NW 2 KS: %.5f ms a launch\n", ms / 100);
    }
    CK(cudaDeviceSynchronize());
    { /* float32 at BERT-base batch 1, 32, 256 (the launcher: kc_attn_tile in this tree) */
        Buf<float> q32(B * S * 3 * H * D, 1.0), y32(B * H * S * D, 1.0), m32(B * S, 0.0);
        for (int64_t bt : {1, 32, 256}) {
            KcAttn p32 = p;
            p32.b = bt;
            const float *q3 = q32.d, *k3 = q32.d + H * D, *v3 = q32.d + 2 * H * D;
            ms = time_ms([&] {
                kc_attention<float, false, 64, 64>(0, q3, k3, v3, m32.d, y32.d, &p32);
            });
            printf("time attention fp32 b%lld h12 s128 d64: %.4f ms, %.2f TFLOP/s\n",
                   (long long)bt, ms, 4.0 * bt * H * S * S * D / ms / 1e9);
#ifndef KC_LAB_OLD
            /* the register-tile kernel's three row counts, and kc_attn_tile as its launcher
             * took it before kc_attn_rt (16 rows a block from 2 blocks an SM, else 8) */
            const unsigned hs = (unsigned)(bt * H);
            float rt[3];
            rt[0] = time_ms([&] {
                kc_attn_rt_kernel<float, 64, 64, 8><<<dim3(2, hs), 128>>>(q3, k3, v3, m32.d, y32.d, p32);
            });
            rt[1] = time_ms([&] {
                kc_attn_rt_kernel<float, 64, 64, 4><<<dim3(4, hs), 128>>>(q3, k3, v3, m32.d, y32.d, p32);
            });
            rt[2] = time_ms([&] {
                kc_attn_rt_kernel<float, 64, 64, 2><<<dim3(8, hs), 128>>>(q3, k3, v3, m32.d, y32.d, p32);
            });
            ms = time_ms([&] {
                if (hs * 8 >= 264)
                    kc_attn_tile_kernel<float, 64, 64, 16><<<dim3(8, hs), 128>>>(q3, k3, v3, m32.d, y32.d, p32);
                else
                    kc_attn_tile_kernel<float, 64, 64, 8><<<dim3(16, hs), 64>>>(q3, k3, v3, m32.d, y32.d, p32);
            });
            printf("time attention fp32 b%lld: rt 64 rows %.4f, 32 rows %.4f, 16 rows %.4f; "
                   "tile (before) %.4f ms\n", (long long)bt, rt[0], rt[1], rt[2], ms);
#endif
        }
    }
}

int main(int argc, char **argv) {
    bool time = argc > 1 && strcmp(argv[1], "--time") == 0;
    if (time) {
        timing();
        return 0;
    }
    ln_case<__half>("fp16", 37, 768, true, true, 0, 4e-3);    /* 3 chunks of 8 */
    ln_case<__half>("fp16", 37, 768, false, true, 0, 4e-3);
    ln_case<__half>("fp16", 9, 1000, true, false, 0, 4e-3);   /* 4 chunks, the last partial */
    ln_case<__half>("fp16", 9, 100, true, true, 0, 4e-3);     /* not in eights: elements */
    ln_case<__half>("fp16", 9, 768, true, true, 1, 4e-3);     /* rows off 16 bytes */
    ln_case<__half>("fp16", 5, 1536, false, true, 0, 4e-3);   /* past the register limit */
    ln_case<float>("fp32", 37, 768, true, true, 0, 1e-5);     /* 6 chunks of 4 */
    ln_case<float>("fp32", 37, 768, false, false, 0, 1e-5);
    ln_case<float>("fp32", 9, 1020, true, true, 0, 1e-5);     /* 8 chunks, the last partial */
    ln_case<float>("fp32", 9, 33, false, true, 0, 1e-5);      /* elements */
    ln_case<float>("fp32", 9, 512, true, true, 3, 1e-5);      /* misaligned */
    ln_case<float>("fp32", 5, 3000, false, true, 0, 1e-5);
    attn_case<64>(2, 3, 128, 1);  /* BERT's: 2 key tiles, shared mask */
    attn_case<64>(2, 3, 77, 2);   /* partial tiles and rows, per-row mask */
    attn_case<64>(2, 3, 77, 1);   /* batch 1's mask row off 16 bytes: loaded, not cp.async */
    attn_case<64>(1, 2, 200, 0);
    attn_case<16>(2, 2, 70, 1);   /* one k16 block: ldmatrix x2 */
    attn_case<48>(1, 3, 130, 1);  /* three k16 blocks */
    attn_case<128>(1, 2, 100, 2); /* one stage */
    /* the launcher's choice for few heads above: two warps a block splitting the keys; the
     * one-warp kernel where the keys are one tile (and D > 64), or forced */
    attn_case<64>(1, 2, 50, 1);     /* one key tile: one warp */
    attn_case<64>(2, 3, 128, 1, 1);
    attn_case<64>(2, 3, 77, 2, 1);
    attn_case<16>(1, 3, 130, 1, 1);
    attn_case<64>(2, 3, 128, 1, 4); /* 4 warps a block as for many heads */
    attn_case<64>(1, 2, 77, 2, 4);
    attn_case<64>(3, 2, 77, 1, 4);
    attn_case<32>(1, 2, 100, 1, 4);
    /* programmatic dependent launch (kc_launch_pdl): inputs that the kernel launched just
     * before writes, after it has let its dependents start */
    ln_case<__half>("fp16", 128, 768, true, true, 0, 4e-3, true);
    ln_case<__half>("fp16", 9, 100, false, true, 0, 4e-3, true);
    ln_case<float>("fp32", 37, 768, true, true, 0, 1e-5, true);
    attn_case<64>(1, 12, 128, 1, 0, true); /* BERT b1: one warp a block */
    attn_case<64>(12, 12, 128, 1, 0, true); /* four warps a block (144 heads) */
#ifndef KC_LAB_OLD
    attn_case<64>(2, 3, 128, 1, 8);
    attn_case<64>(1, 2, 200, 2, 8);
#endif
    attn_tile_case<float, 64, 64>("fp32", 1, 12, 128, 128, 1, 1, 0, 1e-5); /* BERT b1: 8 rows */
    attn_tile_case<float, 64, 64>("fp32", 3, 12, 128, 128, 1, 1, 0, 1e-5); /* 16 rows a block */
    attn_tile_case<float, 64, 64>("fp32", 2, 3, 77, 100, 2, 1, 0, 1e-5);   /* partial tiles */
    attn_tile_case<float, 64, 64>("fp32", 2, 2, 37, 130, 3, 2, 1, 1e-5);   /* strided, off 16 B */
    attn_tile_case<float, 40, 24>("fp32", 1, 3, 50, 65, 1, 1, 0, 1e-5);    /* D != DV */
    attn_tile_case<float, 13, 7>("fp32", 2, 2, 19, 33, 0, 2, 0, 1e-5);     /* partial quads */
    /* kc_attn_rt's 64-row tiles (enough heads for a block an SM): P^T over K^T at D 64 */
    attn_tile_case<float, 64, 64>("fp32", 12, 12, 128, 128, 1, 1, 0, 1e-5);
    attn_tile_case<float, 64, 64>("fp32", 6, 24, 77, 150, 2, 2, 1, 1e-5); /* partial, strided */
    attn_tile_case<float, 60, 64>("fp32", 12, 12, 70, 64, 3, 1, 0, 1e-5);  /* NaN rows */
    attn_tile_case<float, 128, 128>("fp32", 1, 2, 70, 100, 2, 1, 0, 1e-5); /* 32-key tiles */
    attn_tile_case<float, 96, 128>("fp32", 12, 12, 40, 90, 1, 1, 0, 1e-5); /* 16 rows, 3 quads */
    attn_tile_case<__half, 40, 24>("fp16", 2, 3, 50, 65, 2, 1, 0, 2e-3);
    attn_tile_case<__half, 64, 64>("fp16", 1, 3, 33, 70, 1, 2, 1, 2e-3);
    attn_tile_case<__half, 36, 36>("fp16", 1, 3, 33, 70, 1, 1, 2, 2e-3);  /* off 4 bytes */
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
