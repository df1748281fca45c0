/* bench/gpu/tma_qconv_lab.cu: kc_qconv.cuh's tensor-copy form (kc_qconv_tma_kernel and its
 * warp-specialized twin; KC_QTMA_ALL builds every variant) against kc_qconv's choice without
 * it for ResNet-50's 3x3 layers, strided 1x1 downsamples and 1x1 layers, the wgmma form
 * (kc_qconv_wg_kernel: every thread gathers its 16-byte chunks of A with cp.async, 167
 * instructions a thread a 128-byte slice, about as many issue cycles as the slice's four wgmma
 * need; docs/cuda.md). kc_qtma_mode() is 0 here except where a check runs kc_qconv through the
 * form (modes 1, 2 and 3, the default), so kc_qconv is the reference.
 *
 * usage: nvcc -std=c++17 -O3 -arch=sm_90a -I runtime/cuda -I tests/cuda \
 *            bench/gpu/tma_qconv_lab.cu -o tmalab
 *        ./tmalab check   (thirteen shapes, random and ResNet-50-like requantization terms:
 *                          each variant, and kc_qconv in modes 1, 2 and 3, against the host's
 *                          integer formula byte for byte; "N passed, N failed")
 *        ./tmalab time    (ResNet-50's eligible int8 layers at batch 256: kc_qconv without the
 *                          form, each variant and kc_qconv in mode 3, CUDA events, median of
 *                          20, outputs compared)
 * A bundle builds mode 3 unless -DKC_QTMA=0, 1 or 2 (bench/gpu/int8_ab.sh compares them). */
#define KC_QTMA_ALL
#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "gpu_test.h"
#include "kc_qconv.cuh"
#include "qconv_ref.h"

/* the variants: BN, ST, warp-specialized (kc_qtma_launch's) */
static const int variants[][3] = {{128, 3, 0}, {128, 4, 0}, {64, 4, 0},
                                  {128, 4, 1}, {128, 6, 1}, {64, 4, 1}};

/* ---- cases (tests/cuda/qconv_ref.h: Case, params, fill, reference) ---- */
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

/* c's parameters and operands as qconv_gpu draws them (c.nozp: the input zero point 0 the form
 * needs); rqform 1, ResNet-50's terms, with its layers' output range too (a ReLU after) */
static void make(Layer &L, const Case &c) {
    L.p = params(c);
    KcQConv &p = L.p;
    if (c.rqform == 1) p.y_zp = 0, p.lo = 0, p.hi = 255;
    size_t nx = (size_t)c.N * c.H * c.W * c.C;
    L.ny = (size_t)c.N * p.OH * p.OW * c.M;
    L.x.resize(nx), L.r.resize(L.ny), L.w.resize((size_t)c.M * p.Kp), L.rq.resize(4 * (size_t)c.M);
    fill(c, p, L.x, L.w, L.rq, L.r);
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

static size_t differ(const std::vector<uint8_t> &a, const std::vector<uint8_t> &b, size_t *first) {
    size_t bad = 0;
    for (size_t i = 0; i < a.size(); i++)
        if (a[i] != b[i] && !bad++) *first = i;
    return bad;
}

static void check_shape(const Case &c, bool host) {
    Layer L;
    make(L, c);
    const KcQConv &p = L.p;
    std::vector<uint8_t> want, got(L.ny), ref(L.ny);
    CK(cudaMemset(L.dy2, 0x5a, L.ny));
    int rc = kc_qconv(0, L.dx, L.dw, L.drq, c.res ? L.dr : NULL, L.dy2, &L.p);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(ref.data(), L.dy2, L.ny, cudaMemcpyDeviceToHost));
    if (host)
        want.resize(L.ny), reference(c, L.p, L.x, L.w, L.rq, L.r, want);
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
        KcQtmaPlan P;
        const char *why;
        if (!kc_qtma_plan(P, L.dx, L.dw, p, v[0], v[1], v[2], &why)) {
            printf("FAIL %s: not taken (%s)\n", c.what, why);
            failed++;
            break;
        }
        CK(cudaMemset(L.dy, 0xa5, L.ny)); /* poison: an unwritten byte shows */
        kc_qtma_launch(0, P, L.drq, c.res ? L.dr : NULL, L.dy, p);
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
    /* kc_qconv through the form (kc_qconv_tma's dispatch), where kc_qconv's rules reach it */
    for (int mode = 1; mode <= 3; mode++) {
        kc_qtma_mode() = mode;
        CK(cudaMemset(L.dy, 0xa5, L.ny));
        rc = kc_qconv(0, L.dx, L.dw, L.drq, c.res ? L.dr : NULL, L.dy, &L.p);
        kc_qtma_mode() = 0;
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(got.data(), L.dy, L.ny, cudaMemcpyDeviceToHost));
        size_t bad = differ(got, want, &first);
        if (rc == KC_OK && !bad) {
            passed++;
            printf("ok   %s: kc_qconv, KC_QTMA mode %d\n", c.what, mode);
        } else {
            failed++;
            printf("FAIL %s: kc_qconv, KC_QTMA mode %d: rc %d, %zu bytes differ\n", c.what, mode,
                   rc, bad);
        }
    }
    drop(L);
}

/* ResNet-50's layers that the form takes (batch 256), with their counts in the model */
struct R50Layer {
    Case c;
    int count; /* layers of this shape in ResNet-50 */
};
static const R50Layer r50[] = {
    {{"layer2 3x3", 256, 28, 28, 128, 128, 3, 3, 1, 1, 1, 1, 1, 1, false, 0, 1, true}, 3},
    {{"layer2.0 3x3 s2", 256, 56, 56, 128, 128, 3, 3, 2, 2, 1, 1, 1, 1, false, 0, 1, true}, 1},
    {{"layer3 3x3", 256, 14, 14, 256, 256, 3, 3, 1, 1, 1, 1, 1, 1, false, 0, 1, true}, 5},
    {{"layer3.0 3x3 s2", 256, 28, 28, 256, 256, 3, 3, 2, 2, 1, 1, 1, 1, false, 0, 1, true}, 1},
    {{"layer4 3x3", 256, 7, 7, 512, 512, 3, 3, 1, 1, 1, 1, 1, 1, false, 0, 1, true}, 2},
    {{"layer4.0 3x3 s2", 256, 14, 14, 512, 512, 3, 3, 2, 2, 1, 1, 1, 1, false, 0, 1, true}, 1},
    {{"layer2.0 downsample", 256, 56, 56, 256, 512, 1, 1, 2, 2, 0, 0, 1, 1, false, 0, 1, true}, 1},
    {{"layer3.0 downsample", 256, 28, 28, 512, 1024, 1, 1, 2, 2, 0, 0, 1, 1, false, 0, 1, true}, 1},
    {{"layer4.0 downsample", 256, 14, 14, 1024, 2048, 1, 1, 2, 2, 0, 0, 1, 1, false, 0, 1, true},
     1},
    {{"layer2 conv3 (1x1 +res)", 256, 28, 28, 128, 512, 1, 1, 1, 1, 0, 0, 1, 1, true, 0, 1, true},
     4},
    {{"layer3 conv3 (1x1 +res)", 256, 14, 14, 256, 1024, 1, 1, 1, 1, 0, 0, 1, 1, true, 0, 1, true},
     6},
    {{"layer4 conv3 (1x1 +res)", 256, 7, 7, 512, 2048, 1, 1, 1, 1, 0, 0, 1, 1, true, 0, 1, true},
     3},
    {{"layer2 conv1 (1x1)", 256, 28, 28, 512, 128, 1, 1, 1, 1, 0, 0, 1, 1, false, 0, 1, true}, 3},
    {{"layer3.0 conv1 (1x1)", 256, 28, 28, 512, 256, 1, 1, 1, 1, 0, 0, 1, 1, false, 0, 1, true}, 1},
    {{"layer3 conv1 (1x1)", 256, 14, 14, 1024, 256, 1, 1, 1, 1, 0, 0, 1, 1, false, 0, 1, true}, 5},
    {{"layer4.0 conv1 (1x1)", 256, 14, 14, 1024, 512, 1, 1, 1, 1, 0, 0, 1, 1, false, 0, 1, true},
     1},
    {{"layer4 conv1 (1x1)", 256, 7, 7, 2048, 512, 1, 1, 1, 1, 0, 0, 1, 1, false, 0, 1, true}, 2},
};

static void check(void) {
    /* small batches against the host; every tile form: TR rows (28: 4 rows, 14: 7), whole
     * images (7 x 7: two a tile, an odd count; 9 x 9: one), strides, a dilation, a residual,
     * partial column tiles (M 48, 80), wide requantization terms; 1x1 layers seen flat (a
     * partial last tile, one tile of 49 pixels) */
    const Case small[] = {
        {"28x28 3x3", 3, 28, 28, 128, 128, 3, 3, 1, 1, 1, 1, 1, 1, false, 0, 0, true},
        {"56->28 3x3 s2", 2, 56, 56, 128, 128, 3, 3, 2, 2, 1, 1, 1, 1, false, 0, 0, true},
        {"14x14 3x3 C256", 3, 14, 14, 256, 256, 3, 3, 1, 1, 1, 1, 1, 1, false, 0, 0, true},
        {"28->14 3x3 s2 C256", 2, 28, 28, 256, 128, 3, 3, 2, 2, 1, 1, 1, 1, false, 0, 0, true},
        {"7x7 3x3 C512, 5 images", 5, 7, 7, 512, 128, 3, 3, 1, 1, 1, 1, 1, 1, false, 0, 0, true},
        {"14->7 3x3 s2 C512", 3, 14, 14, 512, 128, 3, 3, 2, 2, 1, 1, 1, 1, false, 0, 0, true},
        {"56->28 1x1 s2", 2, 56, 56, 256, 256, 1, 1, 2, 2, 0, 0, 1, 1, false, 0, 0, true},
        {"9x9 3x3 d2", 3, 9, 9, 128, 64, 3, 3, 1, 1, 2, 2, 2, 2, false, 0, 0, true},
        {"11x13 5x3 p(2,1)", 2, 11, 13, 128, 48, 5, 3, 1, 1, 2, 1, 1, 1, false, 0, 0, true},
        {"20x20 1x1 +res M80", 2, 20, 20, 128, 80, 1, 1, 1, 1, 0, 0, 1, 1, true, 0, 0, true},
        {"30x30 3x3 s2 +res", 2, 30, 30, 128, 128, 3, 3, 2, 2, 1, 1, 1, 1, true, 0, 0, true},
        {"7x7 1x1 C512 flat, 49 pixels", 1, 7, 7, 512, 192, 1, 1, 1, 1, 0, 0, 1, 1, false, 0, 0,
         true},
        {"14x14 1x1 C256 +res flat, 588", 3, 14, 14, 256, 128, 1, 1, 1, 1, 0, 0, 1, 1, true, 0, 0,
         true},
    };
    for (int form : {2, 1}) /* random shifts 16..42; ResNet-50's terms */
        for (Case c : small) {
            c.rqform = form;
            check_shape(c, true);
        }
}

static void time_all(void) {
    double sum_ref = 0, sum_best = 0, sum_auto = 0;
    for (const R50Layer &l : r50) {
        const Case &c = l.c;
        Layer L;
        make(L, c);
        const KcQConv &p = L.p;
        const uint8_t *res = c.res ? L.dr : NULL;
        std::vector<uint8_t> a(L.ny), b(L.ny);
        float tref = time_ms([&] { kc_qconv(0, L.dx, L.dw, L.drq, res, L.dy2, &L.p); });
        CK(cudaMemcpy(a.data(), L.dy2, L.ny, cudaMemcpyDeviceToHost));
        const double ops = 2.0 * L.ny * p.K;
        printf("%-26s x%d  kc_qconv %.4f ms (%.0f TOPS)", c.what, l.count, tref, ops / tref / 1e9);
        float best = tref;
        for (const auto &v : variants) {
            KcQtmaPlan P;
            const char *why;
            if (v[0] > 64 && p.M < 128) continue;
            if (!kc_qtma_plan(P, L.dx, L.dw, p, v[0], v[1], v[2], &why)) {
                printf("  [not taken: %s]", why);
                break;
            }
            CK(cudaMemset(L.dy, 0xa5, L.ny));
            float t = time_ms([&] { kc_qtma_launch(0, P, L.drq, res, L.dy, p); });
            CK(cudaMemcpy(b.data(), L.dy, L.ny, cudaMemcpyDeviceToHost));
            size_t first = 0, bad = differ(a, b, &first);
            printf("  | BN %d ST %d%s %.4f (%.0f)%s", v[0], v[1], v[2] ? " ws" : "", t,
                   ops / t / 1e9, bad ? " DIFFERS" : "");
            if (bad)
                failed++;
            else
                passed++, best = std::min(best, t);
        }
        /* kc_qconv in mode 3: the default rule */
        kc_qtma_mode() = 3;
        CK(cudaMemset(L.dy, 0xa5, L.ny));
        float tauto = time_ms([&] { kc_qconv(0, L.dx, L.dw, L.drq, res, L.dy, &L.p); });
        kc_qtma_mode() = 0;
        CK(cudaMemcpy(b.data(), L.dy, L.ny, cudaMemcpyDeviceToHost));
        size_t first = 0, bad = differ(a, b, &first);
        printf("  | mode 3 %.4f%s\n", tauto, bad ? " DIFFERS" : "");
        bad ? failed++ : passed++;
        sum_ref += l.count * tref, sum_best += l.count * best, sum_auto += l.count * tauto;
        drop(L);
    }
    printf("ResNet-50 batch 256, these layers weighted by their counts: kc_qconv %.3f ms, with "
           "the faster TMA variant where it wins %.3f ms, mode 3 %.3f ms\n",
           sum_ref, sum_best, sum_auto);
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
    kc_qtma_mode() = 0; /* kc_qconv's own forms: the reference */
    if (!strcmp(mode, "time"))
        time_all();
    else
        check();
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
