/* Kernel lab of the LSTM's recurrent step (runtime/rt_rnn.h) at the bench model's size (H 512:
 * R is 4 gates x 512 x 512 floats, 4 MiB, read from L3 every step), beside its floor:
 *   stream  - the read bandwidth of that 4 MiB (one thread all of it; two threads a half each),
 *             16 independent 64-byte loads summed, no other work: what a step cannot beat;
 *   rows    - the recurrent product on R as ONNX lays it out (rt_rnn_gemv_rows_f32: 8 rows
 *             side by side, lanes summed at each row's end);
 *   packed  - the same product on the panels of rt_rnn_lstm_pack_f32 (rt_rnn_lstm_block_f32:
 *             one stream, h[k] broadcast against 4 gates x 16 units);
 *   proj    - the input projection of 31 steps (rt_rnn_proj_f32, 2048 x 512), for scale.
 * Two threads split R's rows (blocks) in halves and meet at a spinning barrier after every
 * step, as a step through the bundle's pool does. One thread: its CPU time; two: the wall
 * clock (CLOCK_MONOTONIC); median and minimum of REPS runs of STEPS steps (proj: 2 steps);
 * on a loaded machine read the minima. proj: the panels' path (W packed per call, 6 x 64
 * tiles), GFLOP/s in place of GB/s.
 * Build and run: cc -std=gnu11 -O3 -march=native -I. bench/kernels/rnn.c
 * examples/parallel/kiln_pool.c -o /tmp/rnn -lm -lpthread && /tmp/rnn [REPS] */
#define _POSIX_C_SOURCE 200112L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "examples/parallel/kiln_pool.h"
#include "runtime/rt_rnn.h"

#define H 512
#define ROWS (4 * H)
#define STEPS 64
#define MAX_REPS 101

static float *R, *Rp, *hv, *g, *X, *W, *Y, *PW[2];
static atomic_int bar_count, bar_gen;
static int n_threads;
static double sink;

static double now(void) { /* one thread: its CPU time (preemption does not count) */
    struct timespec t;
    clock_gettime(n_threads > 1 ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void barrier(void) {
    int gen = atomic_load(&bar_gen);
    if (atomic_fetch_add(&bar_count, 1) == n_threads - 1) {
        atomic_store(&bar_count, 0);
        atomic_fetch_add(&bar_gen, 1);
    } else {
        while (atomic_load(&bar_gen) == gen) {
        }
    }
}

/* Sum of floats [lo, hi) of buf: 16 chains of 64-byte loads. */
static float stream(const float *buf, int64_t lo, int64_t hi) {
#ifdef __AVX512F__
    __m512 a[16];
    int64_t i;
    int q;
    for (q = 0; q < 16; q++) a[q] = _mm512_setzero_ps();
    for (i = lo; i + 256 <= hi; i += 256)
        for (q = 0; q < 16; q++) a[q] = _mm512_add_ps(a[q], _mm512_loadu_ps(buf + i + 16 * q));
    for (q = 1; q < 16; q++) a[0] = _mm512_add_ps(a[0], a[q]);
    return _mm512_reduce_add_ps(a[0]);
#else
    float s = 0;
    int64_t i;
    for (i = lo; i < hi; i++) s += buf[i];
    return s;
#endif
}

enum { K_STREAM, K_ROWS, K_PACKED, K_PACKED_ALT, K_PROJ, K_LAYER, K_LAYER_PACKED, K_COUNT };
static const char *const names[K_COUNT] = {"stream", "rows", "packed", "packed/alt",
                                           "proj(31)", "layer", "layer/pk"};
static int step_no;
static float *ws, *B0, *Yl, *scratch, *Wp;
static KilnPool pool;
/* The bench model's second layer whole (rt_rnn_par_f32: input 512, 64 steps in chunks of 31
 * as the bundle's stack scratch holds), W and R as ONNX lays them out or packed; two threads:
 * through examples/parallel's kiln_pool, as the bundle's NAME_run_parallel. */
static void layer(int packed) {
    RtRnn p;
    RtPar par = {NULL, NULL, 1, NULL, RT_RNN_PROJ_SCRATCH(H)};
    if (n_threads > 1) par.pfor = kiln_pool_for, par.ctx = &pool, par.workers = n_threads;
    memset(&p, 0, sizeof p);
    p.kind = RT_RNN_LSTM, p.seq = STEPS, p.batch = 1, p.input = H, p.hidden = H;
    p.num_dir = 1, p.act[0][0].fn = RT_RNN_SIGMOID, p.act[0][1].fn = p.act[0][2].fn = RT_RNN_TANH;
    p.chunk = 31, p.packed = packed;
    par.scratch = (unsigned char *)scratch;
    rt_rnn_par_f32(&p, X, packed ? Wp : W, packed ? Rp : R, B0, NULL, hv, hv, NULL, Yl, NULL,
                   NULL, ws, &par);
}

static void one_step(int kind, int t, int nt) {
    const int64_t nb = RT_RNN_LSTM_BLOCKS(H), b0 = nb * t / nt, b1 = nb * (t + 1) / nt;
    int64_t b;
    switch (kind) {
    case K_STREAM:
        sink += stream(R, (int64_t)ROWS * H * t / nt, (int64_t)ROWS * H * (t + 1) / nt);
        break;
    case K_ROWS: {
        int q;
        for (q = 0; q < 4; q++) /* each gate's rows of the thread's units, as the split does */
            rt_rnn_gemv_rows_f32(hv, R, H, g, g, q * H + b0 * 16, q * H + b1 * 16);
        break;
    }
    case K_PACKED:
        for (b = b0; b < b1; b++)
            rt_rnn_lstm_block_f32(hv, Rp + b * H * RT_RNN_LSTM_COLS, H, g, b * 16, 16);
        break;
    case K_PACKED_ALT: /* the blocks backwards every other step: the last read are in L2 */
        for (b = b0; b < b1; b++) {
            const int64_t bb = step_no & 1 ? b0 + b1 - 1 - b : b;
            rt_rnn_lstm_block_f32(hv, Rp + bb * H * RT_RNN_LSTM_COLS, H, g, bb * 16, 16);
        }
        break;
    case K_LAYER:
    case K_LAYER_PACKED:
        layer(kind == K_LAYER_PACKED);
        break;
    default: {
        const int64_t np = ROWS / RT_RNN_PANEL;
        rt_rnn_proj_panels_f32(X, H, 31, W, H, Y, ROWS, np * t / nt * RT_RNN_PANEL,
                               np * (t + 1) / nt * RT_RNN_PANEL, PW[t]);
        break;
    }
    }
}

typedef struct Job {
    int kind, t, steps;
} Job;

static void *run_job(void *arg) {
    const Job *j = (const Job *)arg;
    int s;
    if (j->kind >= K_LAYER) { /* the pool's threads, or none, share it */
        if (j->t == 0) layer(j->kind == K_LAYER_PACKED);
        return NULL;
    }
    for (s = 0; s < j->steps; s++) {
        one_step(j->kind, j->t, n_threads);
        if (j->t == 0) step_no++;
        if (n_threads > 1) barrier();
    }
    return NULL;
}

static double timed(int kind, int steps) {
    pthread_t th[2];
    Job jobs[2];
    double t0;
    int t;
    for (t = 0; t < n_threads; t++) jobs[t].kind = kind, jobs[t].t = t, jobs[t].steps = steps;
    t0 = now();
    if (kind >= K_LAYER) {
        run_job(&jobs[0]);
        return now() - t0;
    }
    for (t = 1; t < n_threads; t++) pthread_create(&th[t], NULL, run_job, &jobs[t]);
    run_job(&jobs[0]);
    for (t = 1; t < n_threads; t++) pthread_join(th[t], NULL);
    return now() - t0;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static float *rnd(int64_t n) {
    float *p = aligned_alloc(64, (size_t)n * sizeof *p);
    int64_t i;
    for (i = 0; i < n; i++) p[i] = (float)rand() / RAND_MAX - 0.5f;
    return p;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 21, k, r;
    double ts[MAX_REPS];
    if (reps < 1 || reps > MAX_REPS) reps = 21;
    R = rnd((int64_t)ROWS * H), hv = rnd(H), g = rnd(ROWS);
    Rp = aligned_alloc(64, RT_RNN_LSTM_PACKED(H) * sizeof(float));
    rt_rnn_lstm_pack_f32(R, H, 1, Rp);
    W = rnd((int64_t)ROWS * H), Y = rnd(31 * ROWS);
    PW[0] = rnd(RT_RNN_PANEL * H), PW[1] = rnd(RT_RNN_PANEL * H);
    ws = rnd(RT_RNN_SCRATCH(4, H, 31)), B0 = rnd(2 * ROWS), Yl = rnd(STEPS * H);
    scratch = rnd(2 * RT_RNN_PANEL * H);
    X = rnd(STEPS * H);
    Wp = aligned_alloc(64, RT_RNN_W_PACKED(ROWS, H) * sizeof(float));
    rt_rnn_pack_w_f32(W, ROWS, H, 1, Wp);
    { /* the packed product against the rows' (same sums, other order) */
        float *g1 = malloc(ROWS * sizeof *g1), *g2 = malloc(ROWS * sizeof *g2), e = 0, m = 0;
        int64_t i, b;
        memset(g1, 0, ROWS * sizeof *g1), memset(g2, 0, ROWS * sizeof *g2);
        rt_rnn_gemv_rows_f32(hv, R, H, g1, g1, 0, ROWS);
        for (b = 0; b < RT_RNN_LSTM_BLOCKS(H); b++)
            rt_rnn_lstm_block_f32(hv, Rp + b * H * RT_RNN_LSTM_COLS, H, g2, b * 16, 16);
        for (i = 0; i < ROWS; i++) {
            float d = g1[i] - g2[i];
            e = d > e ? d : -d > e ? -d : e;
            m = g1[i] > m ? g1[i] : -g1[i] > m ? -g1[i] : m;
        }
        printf("packed vs rows: max |diff| / max |y| = %.2e\n", e / m);
        free(g1), free(g2);
    }
    printf("H %d, %d steps a run, %d runs; per step: median / min us, GB/s of R at the min\n", H,
           STEPS, reps);
    for (n_threads = 1; n_threads <= 2; n_threads++)
        for (k = 0; k < K_COUNT; k++) {
            timed(k, 4); /* warm: R into the caches */
            const int steps = k == K_PROJ ? 2 : k >= K_LAYER ? 1 : STEPS;
            if (k >= K_LAYER && n_threads > 1 && kiln_pool_init(&pool, n_threads) != 0) return 1;
            for (r = 0; r < reps; r++) ts[r] = timed(k, steps) / steps;
            if (k >= K_LAYER && n_threads > 1) kiln_pool_destroy(&pool);
            qsort(ts, (size_t)reps, sizeof *ts, cmp);
            printf("%d thread(s) %-9s %8.1f %8.1f  %6.1f %s\n", n_threads, names[k],
                   ts[reps / 2] * 1e6, ts[0] * 1e6,
                   k >= K_LAYER ? 0.0 :
                   (k == K_PROJ ? 2.0 * 31 : (double)sizeof(float)) * ROWS * H / ts[0] * 1e-9,
                   k == K_PROJ ? "GFLOP/s" : k >= K_LAYER ? "(a run)" : "GB/s");
        }
    return sink == 12345.0;
}
