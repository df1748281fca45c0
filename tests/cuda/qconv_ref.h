/* tests/cuda/qconv_ref.h: what the int8 convolution's GPU checks share (qconv_gpu.cu,
 * bench/gpu/tma_qconv_lab.cu): a seeded xorshift, a case's shape and requantization form,
 * random parameters and operands for it, and the C target's integer formula on the host, the
 * reference every QConv kernel is held to byte for byte. */
#ifndef KILN_TESTS_CUDA_QCONV_REF_H
#define KILN_TESTS_CUDA_QCONV_REF_H
#include <stdint.h>
#include <vector>

#include "kc_qconv.cuh"

static unsigned long long rng_state = 0x2545F4914F6CDD1Dull;

static uint32_t urand32(void) { /* xorshift64 */
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 32);
}
static int irand(int lo, int hi) { return lo + (int)(urand32() % (uint32_t)(hi - lo + 1)); }

struct Case {
    const char *what;
    int N, H, W, C, M, R, S, sh, sw, ph, pw, dh, dw;
    bool res;
    int yoff;   /* the output's byte offset from a 16-byte boundary */
    int rqform; /* 0: random shifts 1..42; 1: ResNet-50's residual layers (one shift, 30
                 * or 31, small multipliers, residual multipliers in [2^30, 2^31)); 2: random
                 * shifts 16..42 (every channel in kc_qrequant_hi's reach, s32 0 on some) */
    bool nozp;  /* x_zp 0 (a symmetric input: the padding chunks are zeros) */
};

/* y = clamp(y_zp + round(((bias + sum x w) * mult + (r - r_zp) * rmult) / 2^shift)):
 * rt_qrequant1's formula, the reference of every QConv kernel */
static void reference(const Case &c, const KcQConv &p, const std::vector<uint8_t> &x,
                      const std::vector<int8_t> &w, const std::vector<int32_t> &rq,
                      const std::vector<uint8_t> &r, std::vector<uint8_t> &y) {
    for (int n = 0; n < c.N; n++)
        for (int oy = 0; oy < p.OH; oy++)
            for (int ox = 0; ox < p.OW; ox++)
                for (int m = 0; m < c.M; m++) {
                    int64_t acc = rq[m];
                    for (int ky = 0; ky < c.R; ky++)
                        for (int kx = 0; kx < c.S; kx++) {
                            int iy = oy * c.sh - c.ph + ky * c.dh,
                                ix = ox * c.sw - c.pw + kx * c.dw;
                            bool in = iy >= 0 && iy < c.H && ix >= 0 && ix < c.W;
                            for (int ch = 0; ch < c.C; ch++) {
                                int32_t xv =
                                    in ? x[((size_t)(n * c.H + iy) * c.W + ix) * c.C + ch] : p.x_zp;
                                acc += xv * w[(size_t)m * p.Kp + (ky * c.S + kx) * c.C + ch];
                            }
                        }
                    size_t o = ((size_t)(n * p.OH + oy) * p.OW + ox) * c.M + m;
                    int64_t t = (int64_t)(int32_t)acc * rq[c.M + m];
                    if (c.res) t += (int64_t)((int32_t)r[o] - p.r_zp) * rq[2 * c.M + m];
                    int s = rq[3 * c.M + m];
                    int64_t v = ((t + ((int64_t)1 << (s - 1))) >> s) + p.y_zp;
                    v = v > p.lo ? v : p.lo; /* Clip's order: lo > hi gives hi */
                    y[o] = (uint8_t)(v < p.hi ? v : p.hi);
                }
}

static KcQConv params(const Case &c) {
    KcQConv p;
    p.N = c.N, p.H = c.H, p.W = c.W, p.C = c.C, p.M = c.M, p.R = c.R, p.S = c.S;
    p.sh = c.sh, p.sw = c.sw, p.ph = c.ph, p.pw = c.pw, p.dh = c.dh, p.dw = c.dw;
    p.OH = (c.H + 2 * c.ph - c.dh * (c.R - 1) - 1) / c.sh + 1;
    p.OW = (c.W + 2 * c.pw - c.dw * (c.S - 1) - 1) / c.sw + 1;
    p.K = c.R * c.S * c.C, p.Kp = (p.K + KC_QBK - 1) / KC_QBK * KC_QBK;
    p.x_zp = irand(0, 255), p.y_zp = irand(0, 255), p.r_zp = irand(0, 255);
    p.lo = irand(0, 1) ? 0 : irand(0, 80), p.hi = irand(0, 1) ? 255 : irand(170, 255);
    if (c.nozp) p.x_zp = 0;
    return p;
}

static void fill(const Case &c, const KcQConv &p, std::vector<uint8_t> &x, std::vector<int8_t> &w,
                 std::vector<int32_t> &rq, std::vector<uint8_t> &r) {
    for (auto &v : x)
        v = (uint8_t)urand32();
    for (int m = 0; m < c.M; m++)
        for (int k = 0; k < p.Kp; k++)
            w[(size_t)m * p.Kp + k] = k < p.K ? (int8_t)urand32() : 0;
    for (auto &v : r)
        v = (uint8_t)urand32();
    int rsh = irand(30, 31);
    for (int m = 0; m < c.M; m++) {
        if (c.rqform == 1) { /* acc * mult about +-2^35, the residual term r 2^30 and more */
            rq[m] = irand(-40000, 40000);
            rq[c.M + m] = irand(1 << 18, (1 << 21) - 1);
            rq[2 * c.M + m] = c.res ? irand(1 << 30, 0x7fffffff) : 0;
            rq[3 * c.M + m] = rsh;
            continue;
        }
        /* shifts 1..42 (below 32 the 64-bit shift's low word is not the answer alone); the
         * multipliers take the sums to about +-100 where the shift allows (small shifts
         * saturate), the residual term to about +-64 */
        int sh = irand(c.rqform == 2 ? 16 : 1, 42);
        rq[m] = irand(-40000, 40000);
        rq[c.M + m] = sh > 12 ? irand(1 << (sh - 13), (int)((1u << (sh - 11)) - 1)) : irand(1, 3);
        rq[2 * c.M + m] = !c.res              ? 0
                          : sh > 3 && sh < 33 ? irand(-(1 << (sh - 2)), 1 << (sh - 2))
                                              : irand(-(1 << 30), 1 << 30);
        rq[3 * c.M + m] = sh;
    }
}

#endif
