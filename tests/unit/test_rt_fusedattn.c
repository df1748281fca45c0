/* Unit tests of the FusedAttention kernel (runtime/rt_fusedattn.h): fresh random operands
 * stored in transposed layouts (read through strides), a broadcast additive mask with -inf
 * entries, the output poisoned first, against a naive reference in double that builds the
 * whole score matrix. The seed is printed with any failure. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "runtime/rt_fusedattn.h"

#include "rt_test_util.h"

#define TOL 1e-5 /* absolute; outputs are convex combinations of values in [-1, 1) */

/* Element offset of logical (b, h, i, j) through strides st. */
static int64_t at(const int64_t st[4], int64_t b, int64_t h, int64_t i, int64_t j) {
    return b * st[0] + h * st[1] + i * st[2] + j * st[3];
}

static void check(const RtFusedAttn *p, const float *q, const float *k, const float *v,
                  const float *mask, const float *y, float scale) {
    double *s = malloc((size_t)p->sk * sizeof *s);
    cr_assert(s);
    for (int64_t b = 0; b < p->b; b++)
        for (int64_t h = 0; h < p->h; h++)
            for (int64_t i = 0; i < p->sq; i++) {
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < p->sk; j++) {
                    double d = 0;
                    for (int64_t t = 0; t < p->d; t++)
                        d += (double)q[at(p->q_st, b, h, i, t)] * k[at(p->k_st, b, h, j, t)];
                    s[j] = d * scale + (mask ? mask[at(p->m_st, b, h, i, j)] : 0.0);
                    if (s[j] > mx) mx = s[j];
                }
                for (int64_t j = 0; j < p->sk; j++) sum += exp(s[j] - mx);
                for (int64_t t = 0; t < p->dv; t++) {
                    double want = 0;
                    for (int64_t j = 0; j < p->sk; j++)
                        want += exp(s[j] - mx) / sum * v[at(p->v_st, b, h, j, t)];
                    double got = y[at(p->y_st, b, h, i, t)];
                    cr_assert(fabs(got - want) <= TOL,
                              "seed %u: y[%lld,%lld,%lld,%lld] = %g, want %g", rng_seed,
                              (long long)b, (long long)h, (long long)i, (long long)t, got, want);
                }
            }
    free(s);
}

Test(rt_fusedattn, matches_the_reference_on_transposed_operands_and_a_causal_mask) {
    rng_init();
    enum { B = 2, H = 3, SQ = 5, SK = 7, D = 8, DV = 4 };
    /* q stored (B, SQ, H, D), k stored (B, SK, H, D), v (B, H, SK, DV), y stored (B, SQ, H, DV) */
    RtFusedAttn p = {B, H, SQ, SK, D, DV,
                     {SQ * H * D, D, H * D, 1}, {SK * H * D, D, H * D, 1},
                     {H * SK * DV, SK * DV, DV, 1}, {0, 0, SK, 1}, {SQ * H * DV, DV, H * DV, 1}};
    float *q = rand_f32(B * SQ * H * D), *k = rand_f32(B * SK * H * D);
    float *v = rand_f32(B * H * SK * DV), *mask = rand_f32(SQ * SK);
    for (int i = 0; i < SQ; i++)
        for (int j = i + 1; j < SK; j++) mask[i * SK + j] = -INFINITY;
    float *y = malloc(B * SQ * H * DV * sizeof *y), row[SK];
    for (int i = 0; i < B * SQ * H * DV; i++) y[i] = NAN;
    rt_fused_attention_f32(&p, q, k, v, mask, y, row, 0.35f);
    check(&p, q, k, v, mask, y, 0.35f);
    free(q), free(k), free(v), free(mask), free(y);
}

Test(rt_fusedattn, matches_the_reference_without_a_mask_on_k_read_as_k_transposed) {
    rng_init();
    enum { B = 1, H = 2, SQ = 9, SK = 3, D = 5, DV = 6 };
    /* k stored as K^T (B, H, D, SK): logical (.., SK, D) has strides (.., 1, SK) */
    RtFusedAttn p = {B, H, SQ, SK, D, DV,
                     {H * SQ * D, SQ * D, D, 1}, {H * D * SK, D * SK, 1, SK},
                     {H * SK * DV, SK * DV, DV, 1}, {0, 0, 0, 0}, {H * SQ * DV, SQ * DV, DV, 1}};
    float *q = rand_f32(B * H * SQ * D), *k = rand_f32(B * H * D * SK);
    float *v = rand_f32(B * H * SK * DV);
    float *y = malloc(B * H * SQ * DV * sizeof *y), row[SK];
    for (int i = 0; i < B * H * SQ * DV; i++) y[i] = NAN;
    rt_fused_attention_f32(&p, q, k, v, NULL, y, row, 2.0f);
    check(&p, q, k, v, NULL, y, 2.0f);
    free(q), free(k), free(v), free(y);
}
