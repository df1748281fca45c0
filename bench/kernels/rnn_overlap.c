/* Kernel lab: can one core hide the LSTM's input projection (FMA-bound) inside its recurrent
 * steps (a 4 MiB stream of R from L3 a step, one FMA per 64 bytes: the FMA units ~60% idle)?
 * The bench model's second layer (H 512, 4H = 2048 gate columns, input I: 512, or 256 as the
 * first layer), one chunk of M = 15 steps (the chunk that fits 256 KiB of scratch with a
 * second buffer of gate rows for the next chunk), the next chunk's 15 rows projected:
 *   stream     - the 15 steps' products alone (rt_rnn_lstm_block_f32 over 32 blocks of R);
 *   then-proj  - the same, then the projection as the kernel runs it (rt_rnn_proj_packed_f32:
 *                rt_fa_gemm_f32's 6 x 64 tiles on W's panels): the sum to beat;
 *   fused      - the projection's iterations spread evenly over the 15 x 32 block products,
 *                interleaved with R's stream inside each block (D pairs of R's rows, then one
 *                projection k: 16 rows x 16 columns of y, 16 FMAs on one W vector and 16
 *                broadcasts of x), the out-of-order core left to overlap the two;
 *   pieces     - each block's share of the projection right after the block, not interleaved
 *                (the prefetchers' run-ahead the only overlap).
 * The projection's sums run from zero in k order, stored and reloaded where a unit spans two
 * blocks: y of fused and pieces must equal then-proj's bytes (checked). One thread, its CPU
 * time; median and minimum of REPS runs (ms a chunk).
 * Build and run: cc -std=gnu11 -O3 -march=native -I. bench/kernels/rnn_overlap.c -o /tmp/ro
 * -lm && /tmp/ro [I] [REPS] */
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/rt_rnn.h"

#ifndef RT_RNN_AVX512
#error "the lab's fused kernel is AVX-512's: build with -march=native on an AVX-512 host"
#endif

#define H 512
#define GH (4 * H)
#define M 15  /* rows of the chunk */
#define NB 32 /* blocks of 16 units */
#define UR 16 /* a projection unit: rows ... */
#define UC 16 /* ... by columns */
#define MAX_REPS 101

static int64_t I;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static float *rnd(int64_t n) {
    float *p = aligned_alloc(64, (size_t)n * sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    return p;
}

/* Unit u (columns u * UC, all M rows), its k iterations [q0, q1), among R's rows [k0, k1) of
 * one block (a: the block's 8 sums). pan NULL: the projection alone. */
static inline __attribute__((always_inline)) void fused(__m512 *a, const float *v,
                                                        const float *pan, int64_t k0,
                                                        int64_t k1, const float *x,
                                                        const float *wp, float *y, int64_t u,
                                                        int64_t q0, int64_t q1) {
    const int64_t c0 = u * UC, P = (k1 - k0) / 2, Kp = q1 - q0;
    const float *wc = wp + c0 / RT_RNN_PANEL * I * RT_RNN_PANEL + c0 % RT_RNN_PANEL;
    __m512 acc[UR];
    int64_t i = 0, q = q0, j, d;
    int r, g;
    for (r = 0; r < UR; r++)
        acc[r] = q0 && r < M ? _mm512_loadu_ps(y + r * GH + c0) : _mm512_setzero_ps();
#define PROJ_STEP()                                                                                \
    do {                                                                                           \
        const __m512 w0 = _mm512_loadu_ps(wc + q * RT_RNN_PANEL);                                  \
        for (r = 0; r < UR; r++)                                                                   \
            acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(x[(r < M ? r : M - 1) * I + q]), w0, acc[r]);  \
        q++;                                                                                       \
    } while (0)
#define R_PAIR()                                                                                   \
    do {                                                                                           \
        const float *pk = pan + (k0 + 2 * i) * RT_RNN_LSTM_COLS;                                   \
        const __m512 x0 = _mm512_set1_ps(v[k0 + 2 * i]), x1 = _mm512_set1_ps(v[k0 + 2 * i + 1]);  \
        for (g = 0; g < 4; g++) {                                                                  \
            a[g] = _mm512_fmadd_ps(x0, _mm512_loadu_ps(pk + 16 * g), a[g]);                        \
            a[4 + g] =                                                                             \
                _mm512_fmadd_ps(x1, _mm512_loadu_ps(pk + RT_RNN_LSTM_COLS + 16 * g), a[4 + g]);    \
        }                                                                                          \
        i++;                                                                                       \
    } while (0)
    {
        const int64_t D = Kp && P / Kp > 1 ? P / Kp : 1, nj = Kp < P / D ? Kp : P / D;
        for (j = 0; j < nj; j++) {
            for (d = 0; d < D; d++) R_PAIR();
            PROJ_STEP();
        }
        while (i < P) R_PAIR();
        while (q < q1) PROJ_STEP();
    }
#undef PROJ_STEP
#undef R_PAIR
    for (r = 0; r < UR && r < M; r++) _mm512_storeu_ps(y + r * GH + c0, acc[r]);
}

/* One block's product (into g) with the projection's iterations [e0, e1) interleaved; pan
 * NULL: those iterations alone. */
static void block_next(const float *v, const float *pan, float *g, int64_t j0, const float *x,
                       const float *wp, float *y, int64_t e0, int64_t e1) {
    const int64_t P = pan ? H / 2 : 0;
    __m512 a[8];
    int64_t k = 0, e = e0;
    int q;
    for (q = 0; q < 8; q++) a[q] = _mm512_setzero_ps();
    while (e < e1) {
        const int64_t q0 = e % I, q1 = q0 + (e1 - e) < I ? q0 + (e1 - e) : I;
        const int64_t end = e + (q1 - q0), kend = 2 * (P * (end - e0) / (e1 - e0));
        fused(a, v, pan, k, kend, x, wp, y, e / I, q0, q1);
        k = kend;
        e = end;
    }
    if (!pan) return; /* else P pairs covered R's H rows (H even) */
    for (q = 0; q < 4; q++) {
        float *gq = g + q * H + j0;
        _mm512_storeu_ps(gq, _mm512_add_ps(_mm512_loadu_ps(gq), _mm512_add_ps(a[q], a[4 + q])));
    }
}

static int cmpd(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

int main(int argc, char **argv) {
    I = argc > 1 ? atoi(argv[1]) : 512;
    int reps = argc > 2 ? atoi(argv[2]) : 41, var, rep;
    if (reps < 1 || reps > MAX_REPS) reps = 41;
    float *r = rnd(4 * H * H), *w = rnd(GH * I), *x = rnd(M * I), *v = rnd(H), *g = rnd(GH);
    float *Rp = aligned_alloc(64, sizeof(float) * RT_RNN_LSTM_PACKED(H));
    float *Wp = aligned_alloc(64, sizeof(float) * RT_RNN_W_PACKED(GH, I));
    float *y[4];
    for (var = 0; var < 4; var++) y[var] = rnd(M * GH);
    rt_rnn_lstm_pack_f32(r, H, 1, Rp);
    rt_rnn_pack_w_f32(w, GH, I, 1, Wp);
    const int64_t work = GH / UC * I, calls = (int64_t)M * NB; /* one unit of rows: M <= UR */
    static const char *const names[4] = {"stream", "then-proj", "fused", "pieces"};
    double t[4][MAX_REPS];
    for (rep = 0; rep < reps; rep++)
        for (var = 0; var < 4; var++) {
            const double t0 = now();
            for (int64_t s = 0; s < M; s++)
                for (int64_t b = 0; b < NB; b++) {
                    const int64_t call = s * NB + b, e0 = call * work / calls;
                    const int64_t e1 = (call + 1) * work / calls;
                    const float *pan = Rp + b * H * RT_RNN_LSTM_COLS;
                    if (var == 2) {
                        block_next(v, pan, g, b * 16, x, Wp, y[2], e0, e1);
                    } else {
                        rt_rnn_lstm_block_f32(v, pan, H, g, b * 16, 16);
                        if (var == 3) block_next(v, NULL, g, b * 16, x, Wp, y[3], e0, e1);
                    }
                }
            if (var == 1) rt_rnn_proj_packed_f32(x, I, M, Wp, I, GH, y[1], NULL);
            t[var][rep] = now() - t0;
        }
    printf("I %lld, %d steps (R 4 MiB a step), next chunk's projection %d x %d x %lld "
           "(%.1f MFLOP), %d runs:\n",
           (long long)I, M, M, GH, (long long)I, 2e-6 * M * GH * (double)I, reps);
    for (var = 0; var < 4; var++) {
        qsort(t[var], (size_t)reps, sizeof(double), cmpd);
        printf("  %-10s median %.3f ms  min %.3f ms\n", names[var], t[var][reps / 2], t[var][0]);
    }
    printf("fused y %s, pieces y %s then-proj's bytes\n",
           memcmp(y[1], y[2], sizeof(float) * M * GH) ? "DIFFERS FROM" : "equals",
           memcmp(y[1], y[3], sizeof(float) * M * GH) ? "DIFFERS FROM" : "equals");
    return 0;
}
