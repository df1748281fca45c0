/* Unit tests of the recurrent runtime kernel (runtime/rt_rnn.h): LSTM, GRU and RNN on fresh
 * random inputs, with outputs poisoned first, against reference loops written here in double
 * that step the whole batch per time step (the kernel steps one batch row at a time), each
 * with the input projection in chunks of 1 step, 2 steps (a remainder chunk for odd lengths)
 * and the whole sequence; sizes that leave remainders of the AVX-512 tiles (8 rows of the
 * recurrent product, 4 x 4 dot products of the input projection, 16 lanes of every sum: the
 * test also builds at -march=native); with the weights in the compiler's packed layouts
 * (W's panels for every kind, the LSTM's gate-interleaved R: tail blocks of units, odd k);
 * and shared among workers, byte for byte the serial result. The seed is printed with any
 * failure. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A task of a packed LSTM chunk (rt_rnn_lstm_steps_f32) leaves the hook call after this many
 * polls for a step (the default: thousands), so that the threaded test below also runs the
 * path where a task leaves and the kernel calls the hook again for the steps left. */
#define RT_RNN_SPIN_POLLS 16
#include "runtime/rt_rnn.h"

#include "rt_test_util.h"

#define TOL_F32 1e-4 /* relative to the reference's magnitude, float accumulations */

static void expect_close(const float *got, const double *want, int64_t n, const char *what) {
    expect_close_tol(got, want, n, TOL_F32, what);
}

static double sigm(double v) { return 1 / (1 + exp(-v)); }

/* The whole problem of one test: shapes and buffers in the ONNX layout 0. */
typedef struct Case {
    RtRnn p;
    int64_t G;
    float *x, *w, *r, *b, *h0, *c0, *peep;
    float *wp, *rp; /* w and r packed (pack_case), what the kernel reads where p.packed */
    int32_t *lens;
} Case;

static Case make_case(int kind, int num_dir, int reverse, int64_t S, int64_t B, int64_t I,
                      int64_t H, bool with_optional) {
    Case c;
    memset(&c, 0, sizeof c);
    c.p.kind = kind, c.p.seq = S, c.p.batch = B, c.p.input = I, c.p.hidden = H;
    c.p.num_dir = num_dir, c.p.reverse = reverse, c.p.chunk = 2;
    for (int d = 0; d < RT_RNN_MAX_DIRS; d++) {
        c.p.act[d][0].fn = kind == RT_RNN_SIMPLE ? RT_RNN_TANH : RT_RNN_SIGMOID;
        c.p.act[d][1].fn = c.p.act[d][2].fn = RT_RNN_TANH;
    }
    c.G = kind == RT_RNN_LSTM ? 4 : kind == RT_RNN_GRU ? 3 : 1;
    c.x = rand_f32(S * B * I);
    c.w = rand_f32(num_dir * c.G * H * I);
    c.r = rand_f32(num_dir * c.G * H * H);
    if (with_optional) {
        c.b = rand_f32(num_dir * 2 * c.G * H);
        c.h0 = rand_f32(num_dir * B * H);
        c.c0 = rand_f32(num_dir * B * H);
        c.peep = rand_f32(num_dir * 3 * H);
        c.lens = malloc((size_t)B * sizeof *c.lens);
        for (int64_t i = 0; i < B; i++)
            c.lens[i] = (int32_t)((i * 7 + 3) % (S + 1));
    }
    return c;
}

static void free_case(Case *c) {
    free(c->x), free(c->w), free(c->r), free(c->b), free(c->h0), free(c->c0), free(c->peep);
    free(c->lens), free(c->wp), free(c->rp);
}

/* The weights as the compiler packs them (cgen_rnn_prepare), poisoned first: `flags`
 * RT_RNN_PACKED_W and (LSTM) RT_RNN_PACKED_R; r stays as it is without the latter. */
static void pack_case(Case *c, int flags) {
    const int64_t H = c->p.hidden, D = c->p.num_dir;
    c->wp = poisoned_f32(D * RT_RNN_W_PACKED(c->G * H, c->p.input));
    rt_rnn_pack_w_f32(c->w, c->G * H, c->p.input, D, c->wp);
    if (flags & RT_RNN_PACKED_R) {
        c->rp = poisoned_f32(D * RT_RNN_LSTM_PACKED(H));
        rt_rnn_lstm_pack_f32(c->r, H, D, c->rp);
    } else {
        c->rp = malloc((size_t)(D * c->G * H * H) * sizeof *c->rp);
        memcpy(c->rp, c->r, (size_t)(D * c->G * H * H) * sizeof *c->rp);
    }
    c->p.packed = flags;
}

/* Reference: y (S, D, B, H), y_h / y_c (D, B, H), all in double, batch stepped together. */
static void reference(const Case *c, double *y, double *y_h, double *y_c) {
    const RtRnn *p = &c->p;
    int64_t S = p->seq, B = p->batch, I = p->input, H = p->hidden, D = p->num_dir, G = c->G;
    double *h = calloc((size_t)(B * H), sizeof *h), *cc = calloc((size_t)(B * H), sizeof *cc);
    double *g = calloc((size_t)(B * G * H), sizeof *g), *hn = calloc((size_t)(B * H), sizeof *hn);
    for (int64_t i = 0; i < S * D * B * H; i++)
        y[i] = 0;
    for (int64_t d = 0; d < D; d++) {
        int rev = p->reverse || d == 1;
        const float *W = c->w + d * G * H * I, *R = c->r + d * G * H * H;
        const float *Wb = c->b ? c->b + d * 2 * G * H : NULL,
                    *P = c->peep ? c->peep + d * 3 * H : NULL;
        for (int64_t i = 0; i < B * H; i++) {
            h[i] = c->h0 ? c->h0[d * B * H + i] : 0;
            cc[i] = c->c0 && p->kind == RT_RNN_LSTM ? c->c0[d * B * H + i] : 0;
        }
        for (int64_t s = 0; s < S; s++) {
            for (int64_t b = 0; b < B; b++) {
                int64_t len = c->lens ? c->lens[b] : S;
                if (s >= len) continue;
                int64_t t = rev ? len - 1 - s : s;
                const float *xr = c->x + (t * B + b) * I;
                double *hb = h + b * H, *cb = cc + b * H;
                /* gates without the recurrent part of GRU's h gate */
                for (int64_t row = 0; row < G * H; row++) {
                    double v = 0;
                    for (int64_t k = 0; k < I; k++)
                        v += (double)xr[k] * W[row * I + k];
                    if (Wb) v += Wb[row];
                    g[b * G * H + row] = v;
                }
                double *gb = g + b * G * H;
                if (p->kind == RT_RNN_LSTM) {
                    for (int64_t row = 0; row < G * H; row++) {
                        for (int64_t k = 0; k < H; k++)
                            gb[row] += hb[k] * R[row * H + k];
                        if (Wb) gb[row] += Wb[G * H + row];
                    }
                    for (int64_t j = 0; j < H; j++) {
                        double ig = sigm(gb[j] + (P ? P[j] * cb[j] : 0));
                        double fg = sigm(gb[2 * H + j] + (P ? P[2 * H + j] * cb[j] : 0));
                        double cn = fg * cb[j] + ig * tanh(gb[3 * H + j]);
                        double og = sigm(gb[H + j] + (P ? P[H + j] * cn : 0));
                        cb[j] = cn;
                        hn[b * H + j] = og * tanh(cn);
                    }
                } else if (p->kind == RT_RNN_GRU) {
                    double z[64], rr[64]; /* H <= 64 in these tests */
                    for (int64_t j = 0; j < H; j++) {
                        double az = 0, ar = 0;
                        for (int64_t k = 0; k < H; k++) {
                            az += hb[k] * R[j * H + k];
                            ar += hb[k] * R[(H + j) * H + k];
                        }
                        if (Wb) az += Wb[G * H + j], ar += Wb[G * H + H + j];
                        z[j] = sigm(gb[j] + az), rr[j] = sigm(gb[H + j] + ar);
                    }
                    for (int64_t j = 0; j < H; j++) {
                        double rec = 0;
                        if (p->linear_before_reset) {
                            for (int64_t k = 0; k < H; k++)
                                rec += hb[k] * R[(2 * H + j) * H + k];
                            if (Wb) rec += Wb[G * H + 2 * H + j];
                            rec *= rr[j];
                        } else {
                            for (int64_t k = 0; k < H; k++)
                                rec += rr[k] * hb[k] * R[(2 * H + j) * H + k];
                            if (Wb) rec += Wb[G * H + 2 * H + j];
                        }
                        double ht = tanh(gb[2 * H + j] + rec);
                        hn[b * H + j] = (1 - z[j]) * ht + z[j] * hb[j];
                    }
                } else {
                    for (int64_t j = 0; j < H; j++) {
                        double v = gb[j];
                        for (int64_t k = 0; k < H; k++)
                            v += hb[k] * R[j * H + k];
                        if (Wb) v += Wb[G * H + j];
                        hn[b * H + j] = tanh(v);
                    }
                }
                for (int64_t j = 0; j < H; j++) {
                    hb[j] = hn[b * H + j];
                    y[((t * D + d) * B + b) * H + j] = hb[j];
                }
            }
        }
        for (int64_t i = 0; i < B * H; i++)
            y_h[d * B * H + i] = h[i], y_c[d * B * H + i] = cc[i];
    }
    free(h), free(cc), free(g), free(hn);
}

static void run_and_compare_chunk(Case *c, int64_t chunk) {
    RtRnn *p = &c->p;
    p->chunk = chunk;
    int64_t ny = p->seq * p->num_dir * p->batch * p->hidden, nh = p->num_dir * p->batch * p->hidden;
    float *y = poisoned_f32(ny), *y_h = poisoned_f32(nh), *y_c = poisoned_f32(nh);
    float *ws = poisoned_f32(RT_RNN_SCRATCH(c->G, p->hidden, chunk));
    double *ry = malloc((size_t)ny * sizeof *ry), *rh = malloc((size_t)nh * sizeof *rh);
    double *rc = malloc((size_t)nh * sizeof *rc);
    int rc_status = rt_rnn_f32(
        p, c->x, p->packed ? c->wp : c->w, p->packed ? c->rp : c->r, c->b, c->lens, c->h0,
        p->kind == RT_RNN_LSTM ? c->c0 : NULL,
        p->kind == RT_RNN_LSTM ? c->peep : NULL, y, y_h, p->kind == RT_RNN_LSTM ? y_c : NULL, ws);
    cr_assert_eq(rc_status, RT_OK);
    reference(c, ry, rh, rc);
    expect_close(y, ry, ny, "Y");
    expect_close(y_h, rh, nh, "Y_h");
    if (p->kind == RT_RNN_LSTM) expect_close(y_c, rc, nh, "Y_c");
    free(y), free(y_h), free(y_c), free(ws), free(ry), free(rh), free(rc);
}

static void run_and_compare(Case *c) {
    run_and_compare_chunk(c, 1);
    run_and_compare_chunk(c, 2);
    run_and_compare_chunk(c, c->p.seq);
}

Test(rt_rnn, lstm_bidirectional_with_every_optional_input_matches_reference) {
    rng_init();
    Case c = make_case(RT_RNN_LSTM, 2, 0, 6, 4, 5, 7, true);
    run_and_compare(&c);
    free_case(&c);
}

Test(rt_rnn, lstm_forward_without_optional_inputs_matches_reference) {
    rng_init();
    Case c = make_case(RT_RNN_LSTM, 1, 0, 5, 3, 4, 6, false);
    run_and_compare(&c);
    free_case(&c);
}

Test(rt_rnn, gru_reverse_matches_reference_in_both_reset_orders) {
    for (int lbr = 0; lbr <= 1; lbr++) {
        rng_init();
        Case c = make_case(RT_RNN_GRU, 1, 1, 5, 3, 4, 6, true);
        c.p.linear_before_reset = lbr;
        run_and_compare(&c);
        free_case(&c);
    }
}

Test(rt_rnn, lstm_at_sizes_off_every_tile_matches_reference) {
    rng_init();
    /* gates 4 * 19 = 76 rows (9 x 8 + 4), input 37 and hidden 19 (16 lanes + 5, + 3) */
    Case c = make_case(RT_RNN_LSTM, 2, 0, 5, 2, 37, 19, true);
    run_and_compare(&c);
    free_case(&c);
}

/* The packed weights (RtRnn.packed): hidden sizes with a tail block of units (19 = 16 + 3,
 * 41 = 2 x 16 + 9) and an odd count of k (the AVX-512 form's pairs of k), one block (16),
 * gate rows off the projection's panels of 64 (4 x 41 = 164 = 2 x 64 + 36), both
 * directions and every optional input, or reverse without them. (Clip and the coupled gates
 * are the split test's.) */
Test(rt_rnn, lstm_with_packed_weights_matches_reference) {
    static const int64_t sizes[][2] = {{37, 19}, {45, 41}, {8, 16}}; /* input, hidden */
    for (int i = 0; i < 3; i++) {
        rng_init();
        Case c = make_case(RT_RNN_LSTM, i == 2 ? 1 : 2, i == 2, 5, 2, sizes[i][0], sizes[i][1],
                           i != 2);
        pack_case(&c, RT_RNN_PACKED_W | RT_RNN_PACKED_R);
        run_and_compare(&c);
        free_case(&c);
    }
}

/* W alone packed (the projection's panels) under each kind, R as ONNX lays it out: gate rows
 * off the panels of 64 (LSTM 4 x 19 = 76, GRU 3 x 35 = 105 in both reset orders, RNN 70). */
Test(rt_rnn, every_kind_with_packed_input_weights_matches_reference) {
    static const int kinds[] = {RT_RNN_LSTM, RT_RNN_GRU, RT_RNN_GRU, RT_RNN_SIMPLE};
    static const int64_t hidden[] = {19, 35, 35, 70};
    for (int i = 0; i < 4; i++) {
        rng_init();
        Case c = make_case(kinds[i], 2, 0, 5, 2, 21, hidden[i], true);
        c.p.linear_before_reset = i == 2;
        pack_case(&c, RT_RNN_PACKED_W);
        run_and_compare(&c);
        free_case(&c);
    }
}

Test(rt_rnn, gru_at_sizes_off_every_tile_matches_reference_in_both_reset_orders) {
    for (int lbr = 0; lbr <= 1; lbr++) {
        rng_init();
        /* 2H = 70 and H = 35 rows of the recurrent products, GH = 105 = 26 x 4 + 1 columns */
        Case c = make_case(RT_RNN_GRU, 1, 0, 6, 1, 21, 35, true);
        c.p.linear_before_reset = lbr;
        run_and_compare(&c);
        free_case(&c);
    }
}

static void reverse_pfor(void *ctx, int64_t n, RtTaskFn fn, void *arg) {
    (void)ctx;
    for (int64_t i = n - 1; i >= 0; i--) fn(arg, i, (int)(i % 3));
}

/* Through rt_rnn_par_f32 with per-worker scratch for W's panels (RT_RNN_PROJ_SCRATCH: the
 * AVX-512 build packs them; 164 gate rows = 2 panels of 64 + 36, input 45 = 2 x 16 + 13):
 * one worker against the reference, then 3 workers (tasks in reverse order) against one,
 * byte for byte; and without scratch (the dot products) against the reference too. */
Test(rt_rnn, shared_among_workers_gives_the_serial_bytes) {
    rng_init();
    Case c = make_case(RT_RNN_LSTM, 1, 0, 7, 2, 45, 41, true);
    RtRnn *p = &c.p;
    p->chunk = 3;
    int64_t ny = p->seq * p->batch * p->hidden, nh = p->batch * p->hidden;
    int64_t nws = RT_RNN_SCRATCH(c.G, p->hidden, p->chunk), stride = RT_RNN_PROJ_SCRATCH(45);
    float *y0 = poisoned_f32(ny), *y1 = poisoned_f32(ny), *h0 = poisoned_f32(nh);
    float *h1 = poisoned_f32(nh), *c0 = poisoned_f32(nh), *ws = poisoned_f32(nws);
    float *scratch = poisoned_f32(3 * stride / (int64_t)sizeof(float));
    double *ry = malloc((size_t)ny * sizeof *ry), *rh = malloc((size_t)nh * sizeof *rh);
    double *rc = malloc((size_t)nh * sizeof *rc);
    RtPar one = {NULL, NULL, 1, (unsigned char *)scratch, stride};
    RtPar three = {reverse_pfor, NULL, 3, (unsigned char *)scratch, stride};
    RtPar bare = {reverse_pfor, NULL, 3, NULL, 0};
    reference(&c, ry, rh, rc);
    cr_assert_eq(rt_rnn_par_f32(p, c.x, c.w, c.r, c.b, c.lens, c.h0, c.c0, c.peep, y0, h0, c0, ws,
                                &one),
                 0);
    expect_close(y0, ry, ny, "Y (one worker)");
    expect_close(h0, rh, nh, "Y_h (one worker)");
    expect_close(c0, rc, nh, "Y_c (one worker)");
    cr_assert_eq(rt_rnn_par_f32(p, c.x, c.w, c.r, c.b, c.lens, c.h0, c.c0, c.peep, y1, h1, c0, ws,
                                &three),
                 0);
    cr_assert(memcmp(y0, y1, (size_t)ny * sizeof *y0) == 0, "seed %u: Y differs", rng_seed);
    cr_assert(memcmp(h0, h1, (size_t)nh * sizeof *h0) == 0, "seed %u: Y_h differs", rng_seed);
    poison(y1, ny);
    cr_assert_eq(rt_rnn_par_f32(p, c.x, c.w, c.r, c.b, c.lens, c.h0, c.c0, c.peep, y1, h1, c0, ws,
                                &bare),
                 0);
    expect_close(y1, ry, ny, "Y (no scratch)");
    free(y0), free(y1), free(h0), free(h1), free(c0), free(ws), free(scratch);
    free(ry), free(rh), free(rc);
    free_case(&c);
}

Test(rt_rnn, simple_rnn_bidirectional_matches_reference) {
    rng_init();
    Case c = make_case(RT_RNN_SIMPLE, 2, 0, 4, 2, 3, 5, true);
    run_and_compare(&c);
    free_case(&c);
}

Test(rt_rnn, batch_major_layout_matches_sequence_major_layout) {
    rng_init();
    Case c = make_case(RT_RNN_LSTM, 2, 0, 4, 3, 2, 5, false);
    int64_t S = 4, B = 3, I = 2, H = 5, D = 2;
    float *xb = malloc((size_t)(S * B * I) * sizeof *xb);
    for (int64_t t = 0; t < S; t++)
        for (int64_t b = 0; b < B; b++)
            for (int64_t k = 0; k < I; k++)
                xb[(b * S + t) * I + k] = c.x[(t * B + b) * I + k];
    float y0[4 * 2 * 3 * 5], y1[4 * 2 * 3 * 5], h0[2 * 3 * 5], h1[2 * 3 * 5];
    float ws[RT_RNN_SCRATCH(4, 5, 2)];
    cr_assert_eq(rt_rnn_f32(&c.p, c.x, c.w, c.r, NULL, NULL, NULL, NULL, NULL, y0, h0, NULL, ws),
                 0);
    c.p.layout = 1;
    cr_assert_eq(rt_rnn_f32(&c.p, xb, c.w, c.r, NULL, NULL, NULL, NULL, NULL, y1, h1, NULL, ws), 0);
    for (int64_t t = 0; t < S; t++)
        for (int64_t d = 0; d < D; d++)
            for (int64_t b = 0; b < B; b++)
                for (int64_t j = 0; j < H; j++)
                    cr_assert_eq(y0[((t * D + d) * B + b) * H + j],
                                 y1[((b * S + t) * D + d) * H + j]);
    for (int64_t d = 0; d < D; d++)
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < H; j++)
                cr_assert_eq(h0[(d * B + b) * H + j], h1[(b * D + d) * H + j]);
    free(xb);
    free_case(&c);
}

Test(rt_rnn, sequence_length_beyond_the_sequence_is_refused_before_writing) {
    rng_init();
    Case c = make_case(RT_RNN_SIMPLE, 1, 0, 3, 2, 2, 3, true);
    c.lens[1] = 4;
    float y[3 * 2 * 3], ws[RT_RNN_SCRATCH(1, 3, 2)];
    for (int i = 0; i < 18; i++)
        y[i] = 42.0f;
    cr_assert_eq(rt_rnn_f32(&c.p, c.x, c.w, c.r, c.b, c.lens, c.h0, NULL, NULL, y, NULL, NULL, ws),
                 RT_ERR_VALUE);
    for (int i = 0; i < 18; i++)
        cr_assert_eq(y[i], 42.0f);
    free_case(&c);
}

Test(rt_rnn, activation_functions_follow_their_onnx_definitions) {
    RtRnnAct a = {RT_RNN_HARD_SIGMOID, 0.2f, 0.5f};
    cr_assert_float_eq(rt_rnn_act_f64(&a, 1.0), 0.7, 1e-7);
    cr_assert_float_eq(rt_rnn_act_f64(&a, 10.0), 1.0, 1e-12);
    a = (RtRnnAct){RT_RNN_SCALED_TANH, 2.0f, 0.5f};
    cr_assert_float_eq(rt_rnn_act_f64(&a, 1.0), 2.0 * tanh(0.5), 1e-7);
    a = (RtRnnAct){RT_RNN_SOFTPLUS, 0, 0};
    cr_assert_float_eq(rt_rnn_act_f64(&a, 50.0), 50.0, 1e-9);
    cr_assert_float_eq(rt_rnn_act_f64(&a, 0.0), log(2.0), 1e-12);
    a = (RtRnnAct){RT_RNN_THRESHOLDED_RELU, 1.0f, 0};
    cr_assert_float_eq(rt_rnn_act_f64(&a, 0.5), 0.0, 1e-12);
    a = (RtRnnAct){RT_RNN_ELU, 1.0f, 0};
    cr_assert_float_eq(rt_rnn_act_f64(&a, -1.0), exp(-1.0) - 1, 1e-12);
}

/* A hook that runs the tasks last to first, worker ids cycling over ctx's count, and counts
 * the LSTM steps that split by hidden units (rt_rnn_lstm_task_f32) and their tasks. */
typedef struct SplitHook {
    int workers;
    int64_t unit_calls, unit_tasks;
} SplitHook;

static void split_pfor(void *ctx, int64_t n, RtTaskFn fn, void *arg) {
    SplitHook *h = (SplitHook *)ctx;
#if defined(RT_RNN_AVX512) || defined(RT_RNN_AVX2)
    if (fn == rt_rnn_lstm_task_f32) h->unit_calls++, h->unit_tasks += n;
#endif
    if (fn == rt_rnn_lstm_packed_task_f32) h->unit_calls++, h->unit_tasks += n;
#if defined(__GNUC__)
    if (fn == rt_rnn_lstm_steps_task_f32) h->unit_calls++, h->unit_tasks += n;
#endif
    for (int64_t i = n - 1; i >= 0; i--) fn(arg, i, (int)(i % h->workers));
}

/* The LSTM step shared by blocks of hidden units (each task its units' four gate rows, then
 * their cells and outputs): Y, Y_h and Y_c byte for byte those of the serial run, for hidden
 * sizes with a tail block (41), many blocks with peepholes, clip and the coupled input-forget
 * gate (100), and one block (8: more workers than blocks, so the step does not split); with
 * the weights as ONNX lays them out (the ISA rows split) and packed (every path splits). */
Test(rt_rnn, lstm_steps_split_by_hidden_units_give_the_serial_bytes) {
    static const int64_t hidden[] = {41, 100, 8};
    static const int n_workers[] = {2, 3, 7};
    for (int pk = 0; pk < 2; pk++)
        for (int hi = 0; hi < 3; hi++) {
            rng_init();
            Case c = make_case(RT_RNN_LSTM, 2, 0, 5, 2, 19, hidden[hi], true);
            RtRnn *p = &c.p;
            if (hi == 1) p->has_clip = 1, p->clip = 0.8f, p->input_forget = 1;
            if (pk) pack_case(&c, RT_RNN_PACKED_W | RT_RNN_PACKED_R);
            const float *w = pk ? c.wp : c.w, *r = pk ? c.rp : c.r;
            int64_t ny = p->seq * 2 * p->batch * p->hidden, nh = 2 * p->batch * p->hidden;
            float *ws = poisoned_f32(RT_RNN_SCRATCH(c.G, p->hidden, p->chunk));
            float *y0 = poisoned_f32(ny), *h0 = poisoned_f32(nh), *c0 = poisoned_f32(nh);
            float *y1 = poisoned_f32(ny), *h1 = poisoned_f32(nh), *c1 = poisoned_f32(nh);
            cr_assert_eq(rt_rnn_f32(p, c.x, w, r, c.b, c.lens, c.h0, c.c0, c.peep, y0, h0, c0, ws),
                         0);
            for (int wi = 0; wi < 3; wi++) {
                SplitHook hk = {n_workers[wi], 0, 0};
                RtPar par = {split_pfor, &hk, n_workers[wi], NULL, 0};
                poison(y1, ny), poison(h1, nh), poison(c1, nh);
                cr_assert_eq(rt_rnn_par_f32(p, c.x, w, r, c.b, c.lens, c.h0, c.c0, c.peep, y1, h1,
                                            c1, ws, &par),
                             0);
                cr_assert(memcmp(y0, y1, (size_t)ny * sizeof *y0) == 0,
                          "H %lld, %d workers, packed %d, seed %u: Y differs",
                          (long long)p->hidden, n_workers[wi], pk, rng_seed);
                cr_assert(memcmp(h0, h1, (size_t)nh * sizeof *h0) == 0, "seed %u: Y_h differs",
                          rng_seed);
                cr_assert(memcmp(c0, c1, (size_t)nh * sizeof *c0) == 0, "seed %u: Y_c differs",
                          rng_seed);
                int splits = pk ? p->hidden > RT_RNN_LSTM_UNITS : 0;
#if defined(RT_RNN_AVX512) || defined(RT_RNN_AVX2)
                if (!pk) splits = p->hidden > RT_RNN_SPLIT_UNITS;
#else
                if (!pk) continue; /* rt_gemm's product: the step does not split */
#endif
                if (splits)
                    cr_assert(hk.unit_calls > 0 && hk.unit_tasks > hk.unit_calls,
                              "H %lld, packed %d: the steps did not split by units",
                              (long long)p->hidden, pk);
                else
                    cr_assert_eq(hk.unit_calls, 0, "H %lld: one block split",
                                 (long long)p->hidden);
            }
            free(ws), free(y0), free(h0), free(c0), free(y1), free(h1), free(c1);
            free_case(&c);
        }
}

#if defined(__GNUC__)
/* A hook with threads of its own: thread w (the caller is 0) runs the tasks w, w + workers,
 * ...; it counts its calls, and those that ran a packed LSTM chunk's steps. */
typedef struct ThreadHook {
    int workers;
    int64_t calls, chunk_calls;
} ThreadHook;
typedef struct ThreadShare {
    RtTaskFn fn;
    void *arg;
    int64_t n;
    int w, workers;
} ThreadShare;
static void *thread_share(void *v) {
    ThreadShare *t = (ThreadShare *)v;
    for (int64_t i = t->w; i < t->n; i += t->workers) t->fn(t->arg, i, t->w);
    return NULL;
}
static void thread_pfor(void *ctx, int64_t n, RtTaskFn fn, void *arg) {
    ThreadHook *h = (ThreadHook *)ctx;
    pthread_t th[8];
    ThreadShare sh[8];
    h->calls++;
    if (fn == rt_rnn_lstm_steps_task_f32) h->chunk_calls++;
    for (int w = 0; w < h->workers; w++) sh[w] = (ThreadShare){fn, arg, n, w, h->workers};
    for (int w = 1; w < h->workers; w++)
        cr_assert_eq(pthread_create(&th[w], NULL, thread_share, &sh[w]), 0);
    thread_share(&sh[0]);
    for (int w = 1; w < h->workers; w++) pthread_join(th[w], NULL);
}

/* A packed LSTM's chunk of steps in one hook call (rt_rnn_lstm_steps_f32: a slot of blocks of
 * a step is claimed once the step before is done, by its own task or, where that one waits,
 * by another), on threads that run at once: Y, Y_h and Y_c
 * byte for byte the serial run's, over and over (a race would show as a differing run), for
 * both layouts, chunks of 3 steps (a swap of the states after an odd chunk) and the whole
 * sequence, tail blocks (41 and 100 units) and 2, 3 and 7 workers; with a short wait
 * (RT_RNN_SPIN_POLLS above) the tasks also leave and the kernel calls again. */
Test(rt_rnn, lstm_chunk_steps_on_threads_give_the_serial_bytes) {
    static const int64_t hidden[] = {41, 100};
    static const int n_workers[] = {2, 3, 7};
    for (int hi = 0; hi < 2; hi++)
        for (int layout = 0; layout < 2; layout++) {
            rng_init();
            Case c = make_case(RT_RNN_LSTM, 2, 0, 23, 2, 19, hidden[hi], true);
            RtRnn *p = &c.p;
            p->layout = layout;
            pack_case(&c, RT_RNN_PACKED_W | RT_RNN_PACKED_R);
            for (int chunk = 0; chunk < 2; chunk++) {
                p->chunk = chunk ? p->seq : 3;
                int64_t ny = p->seq * 2 * p->batch * p->hidden, nh = 2 * p->batch * p->hidden;
                float *ws = poisoned_f32(RT_RNN_SCRATCH(c.G, p->hidden, p->chunk));
                float *y0 = poisoned_f32(ny), *h0 = poisoned_f32(nh), *c0 = poisoned_f32(nh);
                float *y1 = poisoned_f32(ny), *h1 = poisoned_f32(nh), *c1 = poisoned_f32(nh);
                cr_assert_eq(rt_rnn_f32(p, c.x, c.wp, c.rp, c.b, c.lens, c.h0, c.c0, c.peep, y0,
                                        h0, c0, ws),
                             0);
                for (int wi = 0; wi < 3; wi++)
                    for (int rep = 0; rep < 10; rep++) {
                        ThreadHook hk = {n_workers[wi], 0, 0};
                        RtPar par = {thread_pfor, &hk, n_workers[wi], NULL, 0};
                        poison(y1, ny), poison(h1, nh), poison(c1, nh);
                        cr_assert_eq(rt_rnn_par_f32(p, c.x, c.wp, c.rp, c.b, c.lens, c.h0, c.c0,
                                                    c.peep, y1, h1, c1, ws, &par),
                                     0);
                        cr_assert(memcmp(y0, y1, (size_t)ny * sizeof *y0) == 0,
                                  "H %lld, layout %d, chunk %lld, %d workers, seed %u: Y differs",
                                  (long long)p->hidden, layout, (long long)p->chunk,
                                  n_workers[wi], rng_seed);
                        cr_assert(memcmp(h0, h1, (size_t)nh * sizeof *h0) == 0,
                                  "seed %u: Y_h differs", rng_seed);
                        cr_assert(memcmp(c0, c1, (size_t)nh * sizeof *c0) == 0,
                                  "seed %u: Y_c differs", rng_seed);
                        cr_assert(hk.chunk_calls > 0, "H %lld: no chunk shared its steps",
                                  (long long)p->hidden);
                    }
                free(ws), free(y0), free(h0), free(c0), free(y1), free(h1), free(c1);
            }
            free_case(&c);
        }
}
#endif
