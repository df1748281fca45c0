/* Unit tests of the FusedAttention kernels (runtime/rt_fusedattn.h), the row path and the K^T
 * path (whichever ISA path the build takes: the plain build the portable loops, a
 * -march=native one AVX-512 where the CPU has it): fresh random operands stored in transposed
 * layouts (read through strides), broadcast additive masks with -inf entries, shapes that
 * leave remainders of every tile (query rows, keys, outputs), the output poisoned first,
 * against a naive reference in double that builds the whole score matrix. The seed is
 * printed with any failure. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
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

/* Runs the K^T path, serially and through rt_fused_attention_par_f32 with 3 workers
 * (tasks in reverse order, as another schedule would), checks the first against the
 * reference and the second against the first, byte for byte. */
static int64_t size4(const int64_t st[4], const RtFusedAttn *p, int64_t rows, int64_t cols) {
    return (p->b - 1) * st[0] + (p->h - 1) * st[1] + (rows - 1) * st[2] + (cols - 1) * st[3] + 1;
}

static void reverse_pfor(void *ctx, int64_t n, RtTaskFn fn, void *arg) {
    (void)ctx;
    for (int64_t i = n - 1; i >= 0; i--) fn(arg, i, (int)(i % 3));
}

static void check_kt(const RtFusedAttn *p, const float *q, const float *k, const float *v,
                     const float *mask, float scale) {
    const int64_t ny = size4(p->y_st, p, p->sq, p->dv);
    const int64_t ws_n = RT_FA_KT_SCRATCH(p->sk, p->d);
    float *y = poisoned_f32(ny), *y2 = poisoned_f32(ny), *ws = poisoned_f32(ws_n);
    float *ws3 = poisoned_f32(3 * ws_n);
    rt_fused_attention_kt_f32(p, q, k, v, mask, y, ws, scale);
    check(p, q, k, v, mask, y, scale);
    RtPar par = {reverse_pfor, NULL, 3, (unsigned char *)ws3, ws_n * (int64_t)sizeof(float)};
    rt_fused_attention_par_f32(p, q, k, v, mask, y2, scale, &par);
    cr_assert(memcmp(y, y2, (size_t)ny * sizeof *y) == 0, "seed %u: par differs", rng_seed);
    free(y), free(y2), free(ws), free(ws3);
}

Test(rt_fusedattn, kt_path_matches_the_reference_on_packed_qkv_and_a_key_mask) {
    rng_init();
    /* BERT's form, shrunk: q, k, v windows of one (B, S, 3 * H * D) tensor, a (B, 1, 1, SK)
     * mask; SQ = 2 tiles of 6 + 3 rows, SK = 64 + 16 + 7 keys, DV = D = 24 (16 + 8) */
    enum { B = 2, H = 3, S = 87, SQ = 15, D = 24 };
    const int64_t row = 3 * H * D;
    RtFusedAttn p = {B, H, SQ, S, D, D,
                     {S * row, D, row, 1}, {S * row, D, row, 1}, {S * row, D, row, 1},
                     {S, 0, 0, 1}, {SQ * H * D, D, H * D, 1}};
    float *qkv = rand_f32(B * S * row), *mask = rand_f32(B * S);
    for (int b = 0; b < B; b++)
        for (int j = S - 5 - b; j < S; j++) mask[b * S + j] = -INFINITY;
    check_kt(&p, qkv, qkv + H * D, qkv + 2 * H * D, mask, 0.125f);
    free(qkv), free(mask);
}

Test(rt_fusedattn, kt_path_matches_the_reference_on_wide_values_and_a_strided_mask) {
    rng_init();
    /* DV = 64 + 16 + 3 outputs, SK < 16 keys, a causal (SQ, SK) mask read transposed
     * (stride SQ along the keys), q stored (B, H, D, SQ) (strided head dimension) */
    enum { B = 1, H = 2, SQ = 7, SK = 9, D = 5, DV = 83 };
    RtFusedAttn p = {B, H, SQ, SK, D, DV,
                     {H * D * SQ, D * SQ, 1, SQ}, {H * SK * D, SK * D, D, 1},
                     {H * SK * DV, SK * DV, DV, 1}, {0, 0, 1, SQ}, {H * SQ * DV, SQ * DV, DV, 1}};
    float *q = rand_f32(H * D * SQ), *k = rand_f32(H * SK * D), *v = rand_f32(H * SK * DV);
    float *mask = rand_f32(SK * SQ); /* stored (SK, SQ) */
    for (int i = 0; i < SQ; i++)
        for (int j = i + 1; j < SK; j++) mask[j * SQ + i] = -INFINITY;
    check_kt(&p, q, k, v, mask, 0.7f);
    free(q), free(k), free(v), free(mask);
}

Test(rt_fusedattn, kt_path_takes_the_row_path_for_a_strided_value_dimension) {
    rng_init();
    /* v stored (B, H, DV, SK): its last logical dimension has stride SK */
    enum { B = 1, H = 2, SQ = 8, SK = 20, D = 16, DV = 6 };
    RtFusedAttn p = {B, H, SQ, SK, D, DV,
                     {H * SQ * D, SQ * D, D, 1}, {H * SK * D, SK * D, D, 1},
                     {H * DV * SK, DV * SK, 1, SK}, {0, 0, 0, 0}, {H * SQ * DV, SQ * DV, DV, 1}};
    float *q = rand_f32(H * SQ * D), *k = rand_f32(H * SK * D), *v = rand_f32(H * DV * SK);
    check_kt(&p, q, k, v, NULL, 1.5f);
    free(q), free(k), free(v);
}

Test(rt_fusedattn, kt_path_matches_the_reference_for_every_key_remainder_of_a_vector) {
    rng_init();
    /* key counts that end a vector of 16 with 1..16 keys (ViT-B/16's 197 = 12 x 16 + 5; the
     * AVX-512 softmax runs the exp on to the padding and masks the max and the sum), a key
     * mask that hides the last keys of some rows (a whole last vector where there are 16 or
     * fewer past the first), and query rows that leave every remainder of the 6-row tile
     * (7..12: tiles of their rows alone) */
    static const int sks[] = {1, 2, 5, 15, 16, 17, 31, 32, 33, 47, 64, 100, 197};
    enum { B = 1, H = 2, D = 8, DV = 19 };
    for (size_t t = 0; t < sizeof sks / sizeof sks[0]; t++) {
        const int SK = sks[t], SQ = RT_FA_MR + 1 + (int)t % RT_FA_MR;
        RtFusedAttn p = {B, H, SQ, SK, D, DV,
                         {H * SQ * D, SQ * D, D, 1}, {H * SK * D, SK * D, D, 1},
                         {H * SK * DV, SK * DV, DV, 1}, {0, 0, SK, 1},
                         {H * SQ * DV, SQ * DV, DV, 1}};
        float *q = rand_f32(H * SQ * D), *k = rand_f32(H * SK * D), *v = rand_f32(H * SK * DV);
        float *mask = rand_f32(SQ * SK);
        for (int i = 0; i < SQ; i += 3)
            for (int j = SK > 16 ? SK - 16 : 1; j < SK; j++) mask[i * SK + j] = -INFINITY;
        check_kt(&p, q, k, v, mask, 0.4f);
        check_kt(&p, q, k, v, NULL, 0.4f);
        free(q), free(k), free(v), free(mask);
    }
}

Test(rt_fusedattn, kt_path_keeps_the_softmax_sum_exact_over_many_keys) {
    rng_init();
    /* 1500 keys: the exp-sum crosses RT_FA_SUM_BLOCK twice and ends in a partial vector */
    enum { B = 1, H = 1, SQ = 3, SK = 1500, D = 4, DV = 2 };
    RtFusedAttn p = {B, H, SQ, SK, D, DV,
                     {0, 0, D, 1}, {0, 0, D, 1}, {0, 0, DV, 1}, {0, 0, 0, 0}, {0, 0, DV, 1}};
    float *q = rand_f32(SQ * D), *k = rand_f32(SK * D), *v = rand_f32(SK * DV);
    check_kt(&p, q, k, v, NULL, 0.5f);
    free(q), free(k), free(v);
}
