/* Unit tests of QAttention's kernel (runtime/rt_qattn.h): fresh random uint8 Q, K, V, zero
 * points, scales and masks, on shapes that leave remainders in every block (keys not a
 * multiple of 16 or 4, head dimensions not a multiple of 4 or 16), operands read through
 * transposed strides (Q, V, Y as (B,S,H,D), K as K^T), outputs poisoned first, against
 * naive loops written here that share only the float row (rt_qa_softmax_row). Results must
 * match byte for byte. tests/CMakeLists.txt builds this file once more per SIMD path
 * (AVX2, AVX-512 VNNI); the plain build is the portable path. A float reference in double
 * bounds the quantization error, so that a kernel and reference wrong the same way fail.
 * QMatMul (rt_qmatmul) against naive int64 sums. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/rt_qattn.h"

#include "rt_test_util.h"

#define POISON_BYTE 0x5a

static void require_isa(void) {
#ifdef RT_QCONV_TEST_CPU
    __builtin_cpu_init();
    if (!__builtin_cpu_supports(RT_QCONV_TEST_CPU)) cr_skip_test("this CPU lacks " RT_QCONV_TEST_CPU);
#endif
}

TestSuite(rt_qattn, .init = require_isa);

typedef struct Case {
    RtQAttn p;
    uint8_t *q, *k, *v, *y, *yr;
    float *mask, sq, sk, sv, sy, scale;
    int64_t ny;
    void *ws;
} Case;

/* Strides of a (B,H,S,D) logical operand stored as (B,S,H,D) (trans) or as is; K may be
 * stored as (B,H,D,S) (kt). */
static void strides(int64_t st[4], int64_t B, int64_t H, int64_t S, int64_t D, bool trans, bool kt) {
    (void)B;
    if (kt) { /* (B,H,D,S) */
        st[0] = H * D * S, st[1] = D * S, st[2] = 1, st[3] = S;
    } else if (trans) { /* (B,S,H,D) */
        st[0] = S * H * D, st[1] = D, st[2] = H * D, st[3] = 1;
    } else {
        st[0] = H * S * D, st[1] = S * D, st[2] = D, st[3] = 1;
    }
}

static uint8_t *rand_u8(int64_t n) {
    uint8_t *p = malloc((size_t)(n ? n : 1));
    cr_assert(p);
    for (int64_t i = 0; i < n; i++) p[i] = (uint8_t)rng_u32();
    return p;
}

static void make(Case *c, int64_t B, int64_t H, int64_t Sq, int64_t Sk, int64_t D, int64_t Dv,
                 bool trans, bool kt, int mask) {
    RtQAttn *p = &c->p;
    memset(c, 0, sizeof *c);
    p->b = B, p->h = H, p->sq = Sq, p->sk = Sk, p->d = D, p->dv = Dv;
    strides(p->q_st, B, H, Sq, D, trans, false);
    strides(p->k_st, B, H, Sk, D, trans, kt);
    strides(p->v_st, B, H, Sk, Dv, trans, false);
    strides(p->y_st, B, H, Sq, Dv, trans, false);
    c->q = rand_u8(B * H * Sq * D);
    c->k = rand_u8(B * H * Sk * D);
    c->v = rand_u8(B * H * Sk * Dv);
    c->ny = B * H * Sq * Dv;
    c->y = malloc((size_t)c->ny), c->yr = malloc((size_t)c->ny);
    cr_assert(c->y && c->yr);
    memset(c->y, POISON_BYTE, (size_t)c->ny);
    memset(c->yr, POISON_BYTE, (size_t)c->ny);
    p->q_zp = (int32_t)rng_range(0, 255), p->k_zp = (int32_t)rng_range(0, 255);
    p->v_zp = (int32_t)rng_range(100, 156), p->y_zp = (int32_t)rng_range(100, 156);
    c->sq = 0.01f + 0.02f * (float)(rng_u32() % 100) / 100.0f;
    c->sk = 0.01f + 0.02f * (float)(rng_u32() % 100) / 100.0f;
    /* y = zy + the weighted mean of v - zv: most outputs inside 0..255 */
    c->sv = 0.02f, c->sy = 0.02f, c->scale = 1.0f / sqrtf((float)D);
    p->score_scale = c->sq * c->sk * c->scale;
    /* s_v / (255 s_y) = 1/255 as mult / 2^38 */
    p->y_shift = 38;
    p->y_mult = (int32_t)nearbyint((double)c->sv / (255.0 * (double)c->sy) * 274877906944.0);
    if (mask == 1) { /* causal, (Sq, Sk), broadcast over B and H */
        c->mask = malloc((size_t)(Sq * Sk) * sizeof(float));
        for (int64_t i = 0; i < Sq; i++)
            for (int64_t j = 0; j < Sk; j++) c->mask[i * Sk + j] = j > i ? -10000.0f : 0.0f;
        p->m_st[2] = Sk, p->m_st[3] = 1;
    } else if (mask == 2) { /* a key mask (B, 1, 1, Sk) */
        c->mask = malloc((size_t)(B * Sk) * sizeof(float));
        for (int64_t i = 0; i < B * Sk; i++) /* key 0 stays: no row is all masked */
            c->mask[i] = i % Sk && rng_u32() % 4 == 0 ? -1e9f : 0.0f;
        p->m_st[0] = Sk, p->m_st[3] = 1;
    }
    c->ws = malloc((size_t)RT_QA_SCRATCH(Sk, D, Dv));
    cr_assert(c->ws);
    memset(c->ws, POISON_BYTE, (size_t)RT_QA_SCRATCH(Sk, D, Dv));
}

static void release(Case *c) {
    free(c->q), free(c->k), free(c->v), free(c->y), free(c->yr), free(c->mask), free(c->ws);
}

/* The naive loops: int64 sums of zero-point-shifted products, the shared float row. */
static void reference(Case *c) {
    const RtQAttn *p = &c->p;
    int32_t *S = malloc((size_t)p->sk * 4);
    float *f = malloc((size_t)p->sk * 4);
    uint8_t *P = malloc((size_t)p->sk);
    cr_assert(S && f && P);
    for (int64_t b = 0; b < p->b; b++)
        for (int64_t h = 0; h < p->h; h++)
            for (int64_t i = 0; i < p->sq; i++) {
                for (int64_t j = 0; j < p->sk; j++) {
                    int64_t s = 0;
                    for (int64_t t = 0; t < p->d; t++) {
                        int64_t qv = c->q[b * p->q_st[0] + h * p->q_st[1] + i * p->q_st[2] + t * p->q_st[3]];
                        int64_t kv = c->k[b * p->k_st[0] + h * p->k_st[1] + j * p->k_st[2] + t * p->k_st[3]];
                        s += (qv - p->q_zp) * (kv - p->k_zp);
                    }
                    S[j] = (int32_t)s;
                }
                const float *m = c->mask ? c->mask + b * p->m_st[0] + h * p->m_st[1] + i * p->m_st[2] : NULL;
                rt_qa_softmax_row(S, f, P, p->sk, p->score_scale, m, p->m_st[3]);
                for (int64_t t = 0; t < p->dv; t++) {
                    int64_t o = 0;
                    for (int64_t j = 0; j < p->sk; j++)
                        o += (int64_t)P[j] *
                             (c->v[b * p->v_st[0] + h * p->v_st[1] + j * p->v_st[2] + t * p->v_st[3]] - p->v_zp);
                    c->yr[b * p->y_st[0] + h * p->y_st[1] + i * p->y_st[2] + t * p->y_st[3]] =
                        rt_qa_requant((int32_t)o, p);
                }
            }
    free(S), free(f), free(P);
}

/* The largest distance in steps of y between the kernel and attention in double on the
 * dequantized inputs, with P the double softmax rounded to 8 bits (P's rounding is the
 * kernel's design, and its error is not small: y moves by (P_j - p_j)(v_j - z_v) a key, and
 * near-uniform rows round every P_j the same way, 3.5 steps seen). A P_j within 2e-3 of a
 * rounding tie may round either way in float: each such key's |v_j - z_v| s_v / (255 s_y)
 * is subtracted from that output's distance. So the result is at most 0.5 (y's own
 * rounding) unless scores, mask, softmax or the products are wrong. */
static double float_error(const Case *c) {
    const RtQAttn *p = &c->p;
    double worst = 0, *e = malloc((size_t)p->sk * sizeof(double));
    cr_assert(e);
    for (int64_t b = 0; b < p->b; b++)
        for (int64_t h = 0; h < p->h; h++)
            for (int64_t i = 0; i < p->sq; i++) {
                double mx = -1e300, sum = 0;
                for (int64_t j = 0; j < p->sk; j++) {
                    double s = 0;
                    for (int64_t t = 0; t < p->d; t++)
                        s += (c->q[b * p->q_st[0] + h * p->q_st[1] + i * p->q_st[2] + t * p->q_st[3]] - p->q_zp) *
                             (double)c->sq *
                             ((c->k[b * p->k_st[0] + h * p->k_st[1] + j * p->k_st[2] + t * p->k_st[3]] - p->k_zp) *
                              (double)c->sk);
                    s *= c->scale;
                    if (c->mask) s += c->mask[b * p->m_st[0] + h * p->m_st[1] + i * p->m_st[2] + j * p->m_st[3]];
                    e[j] = s;
                    if (s > mx) mx = s;
                }
                for (int64_t j = 0; j < p->sk; j++) sum += e[j] = exp(e[j] - mx);
                for (int64_t t = 0; t < p->dv; t++) {
                    double o = 0, slack = 0;
                    for (int64_t j = 0; j < p->sk; j++) {
                        double p255 = e[j] / sum * 255.0, pq = nearbyint(p255);
                        double dv = (c->v[b * p->v_st[0] + h * p->v_st[1] + j * p->v_st[2] + t * p->v_st[3]] -
                                     p->v_zp) *
                                    (double)c->sv;
                        o += pq / 255.0 * dv;
                        if (fabs(fabs(p255 - floor(p255)) - 0.5) < 2e-3) slack += fabs(dv) / 255.0;
                    }
                    double yq = o / c->sy + p->y_zp;
                    yq = yq < 0 ? 0 : yq > 255 ? 255 : yq;
                    double got = c->y[b * p->y_st[0] + h * p->y_st[1] + i * p->y_st[2] + t * p->y_st[3]];
                    double d = fabs(got - yq) - slack / c->sy;
                    if (d > worst) worst = d;
                }
            }
    free(e);
    return worst;
}

static void check(Case *c, const char *what) {
    reference(c);
    for (int64_t i = 0; i < c->ny; i++)
        cr_assert_eq(c->y[i], c->yr[i],
                     "%s: y[%lld] = %d, reference %d (B %lld H %lld Sq %lld Sk %lld D %lld Dv %lld, seed %u)",
                     what, (long long)i, c->y[i], c->yr[i], (long long)c->p.b, (long long)c->p.h,
                     (long long)c->p.sq, (long long)c->p.sk, (long long)c->p.d, (long long)c->p.dv,
                     rng_seed);
    /* y's rounding: half a step, and float's softmax against double's (1e-3 steps) */
    double err = float_error(c);
    cr_assert(err <= 0.501, "%s: %.4f steps from attention in double with P on 8 bits (seed %u)",
              what, err, rng_seed);
}

Test(rt_qattn, matches_the_reference_on_every_key_and_head_remainder) {
    rng_init();
    for (int64_t sk = 1; sk <= 37; sk += 3)
        for (int64_t d = 1; d <= 21; d += 5) {
            Case c;
            make(&c, 1, 2, rng_range(1, 5), sk, d, rng_range(1, 35), false, false, 0);
            rt_qattention(&c.p, c.q, c.k, c.v, NULL, c.y, c.ws);
            check(&c, "contiguous");
            release(&c);
        }
}

Test(rt_qattn, matches_the_reference_on_transposed_operands_and_a_causal_mask) {
    rng_init();
    for (int r = 0; r < 6; r++) {
        Case c;
        int64_t s = rng_range(1, 40);
        make(&c, rng_range(1, 2), rng_range(1, 3), s, s, rng_range(8, 70), rng_range(8, 70), true,
             false, 1);
        rt_qattention(&c.p, c.q, c.k, c.v, c.mask, c.y, c.ws);
        check(&c, "transposed, causal");
        release(&c);
    }
}

Test(rt_qattn, matches_the_reference_on_k_read_as_k_transposed_with_a_key_mask) {
    rng_init();
    for (int r = 0; r < 6; r++) {
        Case c;
        make(&c, 2, rng_range(1, 3), rng_range(1, 20), rng_range(1, 50), rng_range(1, 40),
             rng_range(1, 40), r % 2 == 0, true, 2);
        rt_qattention(&c.p, c.q, c.k, c.v, c.mask, c.y, c.ws);
        check(&c, "K^T, key mask");
        release(&c);
    }
}

static void reverse_pfor(void *ctx, int64_t n, RtTaskFn fn, void *arg) {
    (void)ctx;
    for (int64_t i = n - 1; i >= 0; i--) fn(arg, i, (int)(i % 3));
}

Test(rt_qattn, par_writes_the_serial_bytes_for_any_schedule) {
    rng_init();
    Case c;
    make(&c, 2, 3, 13, 29, 24, 19, true, false, 1);
    int64_t stride = (RT_QA_SCRATCH(29, 24, 19) + 63) / 64 * 64;
    unsigned char *ws3 = malloc((size_t)(3 * stride));
    cr_assert(ws3);
    RtPar par = {reverse_pfor, NULL, 3, ws3, stride};
    rt_qattention_par(&c.p, c.q, c.k, c.v, c.mask, c.y, &par);
    check(&c, "par");
    free(ws3);
    release(&c);
}

Test(rt_qattn, exp_matches_libm_within_two_ulp_and_is_zero_far_below) {
    for (float x = -87.0f; x <= 0.0f; x += 0.0137f) {
        double want = exp((double)x), got = rt_qa_exp(x);
        if (x < -86.64f) {
            cr_assert_eq(got, 0.0);
            continue;
        }
        cr_assert(fabs(got - want) <= 2.5 * want * 1.2e-7, "exp(%.9g) = %.9g, libm %.9g", (double)x, got, want);
    }
    cr_assert_eq(rt_qa_exp(-INFINITY), 0.0f);
    cr_assert_eq(rt_qa_exp(0.0f), 1.0f);
}

/* QMatMul against naive int64 sums of the shifted products, the same requantization; A or B
 * broadcast over the batch; outputs poisoned first. A case of a few outputs with Y's zero point
 * near 0 or 255 may clip them all; over the 12 cases at least a quarter must land inside
 * (0, 255) (a simulation of 3000 seeds: at most 43% clipped). */
Test(rt_qattn, qmatmul_matches_the_reference_with_either_operand_broadcast) {
    int64_t all_clipped = 0, all_ny = 0;
    rng_init();
    for (int r = 0; r < 12; r++) {
        RtQMatMul p;
        memset(&p, 0, sizeof p);
        p.batch = rng_range(1, 3), p.m = rng_range(1, 9), p.k = rng_range(1, 40), p.n = rng_range(1, 37);
        bool a_bc = r % 3 == 1, b_bc = r % 3 == 2;
        p.a_bst = a_bc ? 0 : p.m * p.k, p.b_bst = b_bc ? 0 : p.k * p.n;
        p.a_zp = (int32_t)rng_range(0, 255), p.b_zp = (int32_t)rng_range(0, 255);
        p.y_zp = (int32_t)rng_range(0, 255);
        p.y_shift = 40, p.y_mult = (int32_t)rng_range(1 << 20, 1 << 26);
        uint8_t *a = rand_u8((a_bc ? 1 : p.batch) * p.m * p.k), *b = rand_u8((b_bc ? 1 : p.batch) * p.k * p.n);
        int64_t ny = p.batch * p.m * p.n;
        uint8_t *y = malloc((size_t)ny);
        int32_t *ws = malloc((size_t)(2 * p.n) * sizeof *ws);
        cr_assert(y && ws);
        memset(y, POISON_BYTE, (size_t)ny);
        rt_qmatmul(&p, a, b, y, ws);
        int64_t wrong = 0, clipped = 0;
        for (int64_t bi = 0; bi < p.batch; bi++)
            for (int64_t i = 0; i < p.m; i++)
                for (int64_t j = 0; j < p.n; j++) {
                    int64_t s = 0;
                    for (int64_t t = 0; t < p.k; t++)
                        s += ((int64_t)a[bi * p.a_bst + i * p.k + t] - p.a_zp) *
                             ((int64_t)b[bi * p.b_bst + t * p.n + j] - p.b_zp);
                    int64_t v = rt_qa_round_shift(s * p.y_mult, p.y_shift) + p.y_zp;
                    v = v < 0 ? 0 : v > 255 ? 255 : v;
                    clipped += v == 0 || v == 255;
                    wrong += y[(bi * p.m + i) * p.n + j] != (uint8_t)v;
                }
        cr_assert_eq(wrong, 0, "%lld of %lld outputs differ (batch %lld M %lld K %lld N %lld, seed %u)",
                     (long long)wrong, (long long)ny, (long long)p.batch, (long long)p.m,
                     (long long)p.k, (long long)p.n, rng_seed);
        all_clipped += clipped, all_ny += ny;
        free(a), free(b), free(y), free(ws);
    }
    cr_assert(4 * all_clipped < 3 * all_ny, "%lld of %lld outputs clipped: the cases test little (seed %u)",
              (long long)all_clipped, (long long)all_ny, rng_seed);
}
