/* Unit tests of the kernels' work sharing (runtime/rt_par.h): each kernel that splits runs
 * once serially (par NULL) and then through hooks that run the tasks last to first and in a
 * shuffled order, with worker ids spread over 2 to 7 workers, on shapes whose tiles do not
 * divide evenly (pixel blocks, panels, row and column tiles, Winograd tiles, pooled rows,
 * query rows); the outputs must
 * be the serial run's bytes, every task must run once, and the split must have made more
 * than one task. The seed is printed with any failure. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_conv_nhwc.h"
#include "runtime/rt_eltwise.h"
#include "runtime/rt_fusedattn.h"
#include "runtime/rt_matmul.h"
#include "runtime/rt_norm.h"
#include "runtime/rt_pgemm.h"
#include "runtime/rt_pool.h"
#include "runtime/rt_wino.h"

#include "rt_test_util.h"

#define MAX_TASKS 4096

typedef struct Hook {
    int workers, shuffle;
    int64_t calls, tasks; /* over the run: hook calls, tasks run */
} Hook;

/* Runs every task once, last to first or shuffled, worker ids cycling over h->workers. */
static void hook_for(void *ctx, int64_t n, RtTaskFn fn, void *arg) {
    Hook *h = (Hook *)ctx;
    static int64_t order[MAX_TASKS];
    static unsigned char seen[MAX_TASKS];
    cr_assert(n >= 1 && n <= MAX_TASKS, "n_tasks %lld", (long long)n);
    for (int64_t i = 0; i < n; i++) order[i] = n - 1 - i, seen[i] = 0;
    if (h->shuffle)
        for (int64_t i = n - 1; i > 0; i--) {
            int64_t j = (int64_t)((rng_unit() + 1.0) * 0.5 * (double)(i + 1)) % (i + 1);
            int64_t t = order[i];
            order[i] = order[j], order[j] = t;
        }
    for (int64_t i = 0; i < n; i++) {
        seen[order[i]]++;
        fn(arg, order[i], (int)(i % h->workers));
    }
    for (int64_t i = 0; i < n; i++) cr_assert_eq(seen[i], 1, "task %lld ran %d times", (long long)i, seen[i]);
    h->calls++;
    h->tasks += n;
}

static RtPar par_of(Hook *h, unsigned char *scratch, int64_t stride) {
    RtPar p = {hook_for, h, h->workers, scratch, stride};
    return p;
}

static const int workers[] = {2, 3, 4, 7};
#define N_WORKERS (sizeof workers / sizeof workers[0])

static void check_pconv(int64_t n, int64_t c, int64_t m, int64_t group, int64_t h, int64_t w,
                        int64_t k, int64_t s, int64_t pad, bool res, const RtAct *act) {
    rng_init();
    RtConvGeom g;
    memset(&g, 0, sizeof g);
    g.n = n, g.c = c, g.m = m, g.group = group;
    g.in[0] = g.out[0] = g.k[0] = g.s[0] = g.d[0] = g.d[1] = g.d[2] = 1;
    g.in[1] = h, g.in[2] = w, g.k[1] = g.k[2] = k, g.s[1] = g.s[2] = s, g.pad[1] = g.pad[2] = pad;
    g.out[1] = (h + 2 * pad - k) / s + 1, g.out[2] = (w + 2 * pad - k) / s + 1;
    int64_t mg = m / group, np = (mg + RT_PGEMM_NR - 1) / RT_PGEMM_NR;
    int64_t yn = n * g.out[1] * g.out[2] * m;
    float *x = rand_f32(n * h * w * c), *wp = rand_f32(group * np * k * k * (c / group) * RT_PGEMM_NR);
    float *b = rand_f32(m), *r = res ? rand_f32(yn) : NULL;
    float *want = poisoned_f32(yn), *got = poisoned_f32(yn);
    rt_pconv_nhwc_f32(x, wp, b, r, want, &g, act);
    for (size_t wi = 0; wi < N_WORKERS; wi++)
        for (int sh = 0; sh < 2; sh++) {
            Hook hk = {workers[wi], sh, 0, 0};
            RtPar p = par_of(&hk, NULL, 0);
            poison(got, yn);
            rt_pconv_nhwc_par_f32(x, wp, b, r, got, &g, act, &p);
            cr_assert(memcmp(got, want, (size_t)yn * sizeof *got) == 0,
                      "pconv %lldx%lldx%lld -> %lld, %d workers%s: not the serial bytes (seed %u)",
                      (long long)h, (long long)w, (long long)c, (long long)m, workers[wi],
                      sh ? " shuffled" : "", rng_seed);
            cr_assert(hk.tasks > 1, "pconv did not split");
        }
    free(x), free(wp), free(b), free(r), free(want), free(got);
}

Test(rt_par, packed_gemm_gives_the_serial_bytes_for_any_split) {
    static const RtAct relu = {RT_ACT_RELU, 0.0, 0.0}, silu = {RT_ACT_SILU, 0.0, 0.0};
    check_pconv(2, 5, 40, 1, 23, 19, 3, 1, 1, false, &relu); /* pixel blocks with a tail */
    check_pconv(1, 300, 70, 1, 3, 5, 1, 1, 0, true, &silu);  /* few pixels: panels split */
    check_pconv(1, 12, 66, 2, 17, 11, 3, 2, 1, true, NULL);  /* groups, strides */
    check_pconv(1, 40, 24, 1, 30, 30, 5, 1, 2, false, NULL); /* long reduction: many blocks */
}

/* A 1x1 convolution of 16 channels into 16 over a side x side image. */
static RtConvGeom square_1x1(int64_t side) {
    RtConvGeom g;
    memset(&g, 0, sizeof g);
    g.n = 1, g.c = 16, g.m = 16, g.group = 1;
    g.in[0] = g.out[0] = g.k[0] = g.k[1] = g.k[2] = 1;
    g.s[0] = g.s[1] = g.s[2] = g.d[0] = g.d[1] = g.d[2] = 1;
    g.in[1] = g.out[1] = side, g.in[2] = g.out[2] = side;
    return g;
}

Test(rt_par, packed_gemm_split_by_rows_gives_the_serial_bytes) {
    /* one image, one group, fewer pixel blocks than tasks: output rows in even parts, ends
     * rounded to whole tiles (rt_pconv_row_pixel); rows of 14 (one AVX-512 tile), of 7 and
     * 13 (ends inside a tile at every ISA), a strided 1x1, a 3x3 */
    static const RtAct clip = {RT_ACT_CLIP, 0.0, 6.0}, silu = {RT_ACT_SILU, 0.0, 0.0};
    check_pconv(1, 96, 144, 1, 14, 14, 1, 1, 0, false, &clip); /* an expansion at 14x14 */
    check_pconv(1, 144, 24, 1, 14, 14, 1, 1, 0, true, NULL);   /* a projection with a sum */
    check_pconv(1, 160, 70, 1, 14, 7, 1, 1, 0, true, &silu);   /* 7 wide, a partial panel */
    check_pconv(1, 33, 40, 1, 17, 13, 1, 1, 0, false, &clip);  /* 13 wide: 17 uneven rows */
    check_pconv(1, 24, 48, 1, 29, 27, 1, 2, 0, false, NULL);   /* 1x1 at stride 2 */
    check_pconv(1, 8, 20, 1, 16, 9, 3, 1, 1, true, &clip);     /* 3x3 of few channels */
    /* the split is the depthwise layers' (rt_conv_nhwc_fused_par_f32): as many tasks as
     * rows cut, each its rows' pixels; but for fewer rows than tasks that the workers cannot
     * share evenly (14 at 4 workers): one run of pixels a worker */
    for (size_t wi = 0; wi < N_WORKERS; wi++) {
        Hook hk = {workers[wi], 0, 0, 0};
        RtPar p = par_of(&hk, NULL, 0);
        RtConvGeom g = square_1x1(14);
        float *x = rand_f32(196 * 16), *wp = rand_f32(16 * 16), *y = poisoned_f32(196 * 16);
        rt_pconv_nhwc_par_f32(x, wp, NULL, NULL, y, &g, NULL, &p);
        const int by_pixels = rt_par_chunks(&p, 14, 1) < rt_par_chunks(&p, 196, 1) &&
                              14 % workers[wi] != 0;
        cr_assert_eq(hk.tasks, by_pixels ? workers[wi] : rt_par_chunks(&p, 14, 1),
                     "%d workers: %lld tasks", workers[wi], (long long)hk.tasks);
        cr_assert_eq(rt_pconv_row_pixel(&g, 14), 196);
        cr_assert_eq(rt_pconv_row_pixel(&g, 0), 0);
        cr_assert_eq(rt_pconv_row_pixel(&g, 7) % RT_PGEMM_MR, 0);
        free(x), free(wp), free(y);
    }
}

Test(rt_par, packed_gemm_split_by_pixels_gives_the_serial_bytes) {
    /* fewer rows than tasks, not a multiple of the workers (7x7 at 2 and 3 workers): one even
     * run of pixels a worker, its ends inside a tile (RT_PGEMM_SHORT) or rounded to one */
    static const RtAct clip = {RT_ACT_CLIP, 0.0, 6.0};
    check_pconv(1, 96, 40, 1, 7, 7, 1, 1, 0, true, NULL);    /* a projection at 7x7 */
    check_pconv(1, 40, 160, 1, 7, 7, 1, 1, 0, false, &clip); /* an expansion at 7x7 */
    check_pconv(1, 24, 70, 1, 5, 11, 1, 1, 0, false, &clip); /* 5 rows of 11 */
    for (int nw = 2; nw <= 3; nw++) {
        Hook hk = {nw, 0, 0, 0};
        RtPar p = par_of(&hk, NULL, 0);
        RtConvGeom g = square_1x1(7);
        float *x = rand_f32(49 * 16), *wp = rand_f32(16 * 16), *y = poisoned_f32(49 * 16);
        rt_pconv_nhwc_par_f32(x, wp, NULL, NULL, y, &g, NULL, &p);
        cr_assert_eq(hk.tasks, nw, "%d workers: %lld tasks", nw, (long long)hk.tasks);
        cr_assert_eq(rt_pconv_part_pixel(&g, nw, 0), 0);
        cr_assert_eq(rt_pconv_part_pixel(&g, nw, nw), 49);
        cr_assert(RT_PGEMM_SHORT || rt_pconv_part_pixel(&g, nw, 1) % RT_PGEMM_MR == 0);
        free(x), free(wp), free(y);
    }
}

/* Runs only the tasks that kiln_pool deals worker 0 of ctx's workers when none steals:
 * [0, n / workers). */
static void first_range_for(void *ctx, int64_t n, RtTaskFn fn, void *arg) {
    const Hook *h = (const Hook *)ctx;
    for (int64_t i = 0; i < n / h->workers; i++) fn(arg, i, 0);
}

/* Pixels of y (n_px pixels of m channels) that are no longer poison (NaN). */
static int64_t written_pixels(const float *y, int64_t n_px, int64_t m) {
    int64_t k = 0;
    for (int64_t i = 0; i < n_px; i++) k += y[i * m] == y[i * m];
    return k;
}

/* A 3x3 stride-1 convolution with pads of 1 (a Winograd layer) of c = (n, C, M, h, w). */
static RtConvGeom wino_geom(const int64_t c[5]) {
    RtConvGeom g;
    memset(&g, 0, sizeof g);
    g.n = c[0], g.c = c[1], g.m = c[2], g.group = 1;
    g.in[0] = g.out[0] = g.k[0] = g.s[0] = g.s[1] = g.s[2] = 1;
    g.d[0] = g.d[1] = g.d[2] = 1;
    g.in[1] = g.out[1] = c[3], g.in[2] = g.out[2] = c[4];
    g.k[1] = g.k[2] = 3, g.pad[1] = g.pad[2] = 1;
    return g;
}

Test(rt_par, winograd_gives_the_serial_bytes_in_even_runs_of_tiles) {
    /* (n, C, M, side h, side w): a 14x14 image (16 tiles: one block and a bit), 28x28 (49
     * tiles in 4 blocks), a batch of sides that are no multiple of 4 */
    static const int64_t cases[][5] = {{1, 16, 20, 14, 14}, {1, 8, 24, 28, 28}, {2, 5, 9, 9, 13}};
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        rng_init();
        const RtConvGeom g = wino_geom(cases[ci]);
        const int64_t px = g.n * g.out[1] * g.out[2], yn = px * g.m;
        const int64_t np = (g.m + RT_PGEMM_NR - 1) / RT_PGEMM_NR;
        float *x = rand_f32(g.n * g.in[1] * g.in[2] * g.c);
        float *u = rand_f32(36 * np * g.c * RT_PGEMM_NR); /* any floats: bytes, not values */
        float *b = rand_f32(g.m), *want = poisoned_f32(yn), *got = poisoned_f32(yn);
        const int64_t stride = rt_wino_ws_floats(g.c) * (int64_t)sizeof(float);
        unsigned char *scratch = malloc((size_t)(stride * 7));
        rt_wino_nhwc_f32(x, u, b, NULL, want, &g, NULL);
        for (size_t wi = 0; wi < N_WORKERS; wi++)
            for (int sh = 0; sh < 2; sh++) {
                Hook hk = {workers[wi], sh, 0, 0};
                RtPar p = par_of(&hk, sh ? scratch : NULL, sh ? stride : 0);
                poison(got, yn);
                rt_wino_nhwc_par_f32(x, u, b, NULL, got, &g, NULL, &p);
                cr_assert(memcmp(got, want, (size_t)yn * sizeof *got) == 0,
                          "winograd case %zu, %d workers%s: not the serial bytes (seed %u)", ci,
                          workers[wi], sh ? " shuffled, in scratch" : "", rng_seed);
                cr_assert(hk.tasks > 1 || rt_wino_tiles(&g) <= RT_WINO_TB_MAX,
                          "winograd did not split"); /* one block (AVX2's 18 tiles) runs whole */
            }
        /* two workers: the first one's tasks are its half of the tiles, row by row (16
         * tiles of 14x14: rows 0-7, not the 14 tiles of a whole block) */
        Hook hk = {2, 0, 0, 0};
        RtPar p = {first_range_for, &hk, 2, scratch, stride};
        const int64_t tw = (g.out[2] + 3) / 4, tiles = rt_wino_tiles(&g);
        int64_t want_px = 0;
        for (int64_t t = 0; t < tiles / 2; t++) { /* tile t's pixels inside the image */
            const int64_t th = t % (tiles / g.n) / tw, tc = t % tw;
            want_px += ((g.out[1] - 4 * th) < 4 ? g.out[1] - 4 * th : 4) *
                       ((g.out[2] - 4 * tc) < 4 ? g.out[2] - 4 * tc : 4);
        }
        poison(got, yn);
        rt_wino_nhwc_par_f32(x, u, b, NULL, got, &g, NULL, &p);
        if (tiles > RT_WINO_TB_MAX)
            cr_assert_eq(written_pixels(got, px, g.m), want_px,
                         "winograd case %zu: worker 0 of 2 wrote %lld pixels, not the first "
                         "%lld tiles' %lld", ci, (long long)written_pixels(got, px, g.m),
                         (long long)(tiles / 2), (long long)want_px);
        free(x), free(u), free(b), free(want), free(got), free(scratch);
    }
}

Test(rt_par, winograd_of_heavy_weights_splits_by_panels_and_gives_the_serial_bytes) {
    /* (n, C, M, h, w): transformed weights over RT_WINO_PANEL_WEIGHTS (2) x the
     * activations: ResNet-50's 256@14x14 (one block; AVX-512: the 16-tile path) and
     * 128@28x28 (49 tiles: several blocks), 200 outputs (a last pair of one panel) on 4
     * tiles, a batch of 2 with 72 outputs (3 pairs: 4 and 7 workers split by tiles) */
    static const int64_t cases[][5] = {{1, 256, 256, 14, 14}, {1, 128, 128, 28, 28},
                                       {1, 32, 200, 5, 7}, {2, 24, 72, 6, 6}};
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        rng_init();
        const RtConvGeom g = wino_geom(cases[ci]);
        const int64_t px = g.n * g.out[1] * g.out[2], yn = px * g.m;
        const int64_t np = (g.m + RT_PGEMM_NR - 1) / RT_PGEMM_NR;
        const int64_t pairs = (g.m + RT_PGEMM_NT - 1) / RT_PGEMM_NT;
        float *x = rand_f32(g.n * g.in[1] * g.in[2] * g.c);
        float *u = rand_f32(36 * np * g.c * RT_PGEMM_NR); /* any floats: bytes, not values */
        float *b = rand_f32(g.m), *r = rand_f32(yn);
        float *want = poisoned_f32(yn), *got = poisoned_f32(yn);
        const int64_t stride = rt_wino_ws_floats(g.c) * (int64_t)sizeof(float);
        unsigned char *scratch = malloc((size_t)(stride * 7));
        static const RtAct relu = {RT_ACT_RELU, 0.0, 0.0};
        cr_assert(36 * g.c * g.m > RT_WINO_PANEL_WEIGHTS * g.n *
                                       (g.in[1] * g.in[2] * g.c + px * g.m),
                  "case %zu: weights too light to split by panels", ci);
        rt_wino_nhwc_f32(x, u, b, r, want, &g, &relu);
        for (size_t wi = 0; wi < N_WORKERS; wi++)
            for (int sh = 0; sh < 2; sh++) {
                Hook hk = {workers[wi], sh, 0, 0};
                RtPar p = par_of(&hk, scratch, stride);
                poison(got, yn);
                rt_wino_nhwc_par_f32(x, u, b, r, got, &g, &relu, &p);
                cr_assert(memcmp(got, want, (size_t)yn * sizeof *got) == 0,
                          "winograd by panels, case %zu, %d workers%s: not the serial bytes "
                          "(seed %u)", ci, workers[wi], sh ? " shuffled" : "", rng_seed);
                cr_assert(pairs < workers[wi] || hk.tasks == workers[wi],
                          "case %zu, %d workers: %lld tasks, not one a worker", ci, workers[wi],
                          (long long)hk.tasks);
            }
        /* two workers: the first one's task is every pixel of its half of the panel pairs */
        Hook hk = {2, 0, 0, 0};
        RtPar p = {first_range_for, &hk, 2, scratch, stride};
        const int64_t m_hi = pairs / 2 * RT_PGEMM_NT < g.m ? pairs / 2 * RT_PGEMM_NT : g.m;
        poison(got, yn);
        rt_wino_nhwc_par_f32(x, u, b, r, got, &g, &relu, &p);
        for (int64_t i = 0; i < px; i++)
            for (int64_t m = 0; m < g.m; m++)
                cr_assert((got[i * g.m + m] == got[i * g.m + m]) == (m < m_hi),
                          "case %zu: worker 0 of 2, pixel %lld channel %lld: %g (its channels: "
                          "0..%lld)", ci, (long long)i, (long long)m, (double)got[i * g.m + m],
                          (long long)m_hi);
        free(x), free(u), free(b), free(r), free(want), free(got), free(scratch);
    }
}

Test(rt_par, channels_last_maxpool_gives_the_serial_bytes_in_even_runs_of_rows) {
    /* (n, c, h, w, k, s, pad): ResNet's stem pool (3x3/2, pad 1) on an even and an odd side,
     * 2x2/2 with channels no multiple of a vector, a batch of windows over the edge */
    static const int64_t cases[][7] = {{1, 64, 16, 16, 3, 2, 1}, {1, 19, 23, 17, 3, 2, 1},
                                       {1, 37, 12, 12, 2, 2, 0}, {3, 8, 7, 9, 3, 1, 1}};
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        rng_init();
        const int64_t n = cases[ci][0], c = cases[ci][1], k = cases[ci][4], s = cases[ci][5];
        const int64_t pad = cases[ci][6];
        RtPoolGeom g;
        memset(&g, 0, sizeof g);
        g.nc = n;
        g.in[0] = g.out[0] = g.k[0] = g.s[0] = g.d[0] = g.d[1] = g.d[2] = 1;
        g.in[1] = cases[ci][2], g.in[2] = cases[ci][3], g.k[1] = g.k[2] = k;
        g.s[1] = g.s[2] = s, g.pad[1] = g.pad[2] = g.pad_end[1] = g.pad_end[2] = pad;
        g.out[1] = (g.in[1] + 2 * pad - k) / s + 1, g.out[2] = (g.in[2] + 2 * pad - k) / s + 1;
        const int64_t px = n * g.out[1] * g.out[2], yn = px * c;
        float *x = rand_f32(n * g.in[1] * g.in[2] * c);
        float *want = poisoned_f32(yn), *got = poisoned_f32(yn);
        rt_maxpool_nhwc_f32(x, want, &g, c);
        for (size_t wi = 0; wi < N_WORKERS; wi++)
            for (int sh = 0; sh < 2; sh++) {
                Hook hk = {workers[wi], sh, 0, 0};
                RtPar p = par_of(&hk, NULL, 0);
                poison(got, yn);
                rt_maxpool_nhwc_par_f32(x, got, &g, c, &p);
                cr_assert(memcmp(got, want, (size_t)yn * sizeof *got) == 0,
                          "maxpool case %zu, %d workers%s: not the serial bytes (seed %u)", ci,
                          workers[wi], sh ? " shuffled" : "", rng_seed);
                cr_assert_eq(hk.tasks, rt_par_chunks(&p, n * g.out[1], 1),
                             "maxpool case %zu: %lld tasks", ci, (long long)hk.tasks);
            }
        /* two workers: the first one's tasks are the first half of the rows (rt_par_part) */
        Hook hk = {2, 0, 0, 0};
        RtPar p = {first_range_for, &hk, 2, NULL, 0};
        poison(got, yn);
        rt_maxpool_nhwc_par_f32(x, got, &g, c, &p);
        cr_assert_eq(written_pixels(got, px, c), n * g.out[1] / 2 * g.out[2],
                     "maxpool case %zu: worker 0 of 2 wrote %lld pixels", ci,
                     (long long)written_pixels(got, px, c));
        free(x), free(want), free(got);
    }
}

Test(rt_par, gemm_gives_the_serial_bytes_for_any_split) {
    static const int64_t shapes[][3] = {{37, 300, 50}, {3, 700, 33}, {130, 5, 17}};
    for (size_t si = 0; si < 3; si++) {
        rng_init();
        int64_t M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
        float *a = rand_f32(M * K), *b = rand_f32(K * N), *c = rand_f32(N);
        float *want = poisoned_f32(M * N), *got = poisoned_f32(M * N);
        RtGemmf32 g = {.m = M, .n = N, .k = K, .alpha = 1.0f, .beta = 1.0f, .a = a, .a_rs = K,
                       .a_cs = 1, .b = b, .b_rs = N, .b_cs = 1, .c = c, .c_rs = 0, .c_cs = 1,
                       .y = want};
        rt_gemm_f32(&g);
        g.y = got;
        for (size_t wi = 0; wi < N_WORKERS; wi++) {
            Hook hk = {workers[wi], 1, 0, 0};
            RtPar p = par_of(&hk, NULL, 0);
            poison(got, M * N);
            rt_gemm_par_f32(&g, &p);
            cr_assert(memcmp(got, want, (size_t)(M * N) * sizeof *got) == 0,
                      "gemm %lldx%lldx%lld, %d workers: not the serial bytes (seed %u)",
                      (long long)M, (long long)N, (long long)K, workers[wi], rng_seed);
            cr_assert(hk.tasks > 1, "gemm did not split");
        }
        free(a), free(b), free(c), free(want), free(got);
    }
}

Test(rt_par, channels_last_convolutions_give_the_serial_bytes_for_any_split) {
    /* depthwise 3x3 (the vector path), depthwise with a multiplier, a grouped 3x3 */
    static const int64_t cases[][4] = {{32, 32, 32, 1}, {8, 16, 8, 2}, {12, 18, 3, 1}};
    for (size_t ci = 0; ci < 3; ci++) {
        rng_init();
        RtConvGeom g;
        memset(&g, 0, sizeof g);
        g.n = 2, g.c = cases[ci][0], g.m = cases[ci][1], g.group = cases[ci][2];
        g.in[0] = g.out[0] = g.k[0] = g.s[0] = g.d[0] = g.d[1] = g.d[2] = 1;
        g.in[1] = 13, g.in[2] = 11, g.k[1] = g.k[2] = 3, g.s[1] = g.s[2] = cases[ci][3];
        g.pad[1] = g.pad[2] = 1;
        g.out[1] = (13 + 2 - 3) / g.s[1] + 1, g.out[2] = (11 + 2 - 3) / g.s[2] + 1;
        int64_t yn = g.n * g.out[1] * g.out[2] * g.m;
        float *x = rand_f32(g.n * 13 * 11 * g.c), *w = rand_f32(9 * (g.c / g.group) * g.m);
        float *b = rand_f32(g.m), *want = poisoned_f32(yn), *got = poisoned_f32(yn);
        static const RtAct clip = {RT_ACT_CLIP, 0.0, 6.0};
        rt_conv_nhwc_fused_f32(x, w, b, NULL, want, &g, &clip);
        for (size_t wi = 0; wi < N_WORKERS; wi++) {
            Hook hk = {workers[wi], 1, 0, 0};
            RtPar p = par_of(&hk, NULL, 0);
            poison(got, yn);
            rt_conv_nhwc_fused_par_f32(x, w, b, NULL, got, &g, &clip, &p);
            cr_assert(memcmp(got, want, (size_t)yn * sizeof *got) == 0,
                      "conv case %zu, %d workers: not the serial bytes (seed %u)", ci,
                      workers[wi], rng_seed);
            cr_assert(hk.tasks > 1, "conv did not split");
        }
        free(x), free(w), free(b), free(want), free(got);
    }
}

Test(rt_par, channels_last_global_pools_give_the_serial_bytes_for_any_split) {
    /* channel counts with a tail block, one block only (more workers than tasks), many */
    static const int64_t cases[][3] = {{2, 143, 37}, {1, 50, 5}, {3, 7, 200}, {1, 1000, 16}};
    for (size_t ci = 0; ci < 4; ci++)
        for (int is_max = 0; is_max < 2; is_max++) {
            rng_init();
            const int64_t n = cases[ci][0], size = cases[ci][1], c = cases[ci][2];
            float *x = rand_f32(n * size * c), *want = poisoned_f32(n * c), *got = poisoned_f32(n * c);
            rt_global_pool_nhwc_f32(x, want, n, size, c, is_max);
            for (size_t wi = 0; wi < N_WORKERS; wi++)
                for (int sh = 0; sh < 2; sh++) {
                    Hook hk = {workers[wi], sh, 0, 0};
                    RtPar p = par_of(&hk, NULL, 0);
                    poison(got, n * c);
                    rt_global_pool_nhwc_par_f32(x, got, n, size, c, is_max, &p);
                    cr_assert(memcmp(got, want, (size_t)(n * c) * sizeof *got) == 0,
                              "global %s pool %lldx%lldx%lld, %d workers%s: not the serial bytes "
                              "(seed %u)", is_max ? "max" : "average", (long long)n,
                              (long long)size, (long long)c, workers[wi], sh ? " shuffled" : "",
                              rng_seed);
                    cr_assert(hk.tasks > 1 || n * ((c + RT_POOL_PAR_CHANNELS - 1) /
                                                   RT_POOL_PAR_CHANNELS) == 1,
                              "global pool did not split");
                }
            free(x), free(want), free(got);
        }
}

Test(rt_par, fused_attention_gives_the_serial_bytes_with_per_worker_scratch) {
    rng_init();
    const int64_t B = 2, H = 3, S = 21, T = 17, D = 8;
    RtFusedAttn p = {B, H, S, T, D, D,
                     {H * S * D, S * D, D, 1}, {H * T * D, T * D, D, 1}, {H * T * D, T * D, D, 1},
                     {0, 0, T, 1}, {H * S * D, S * D, D, 1}};
    float *q = rand_f32(B * H * S * D), *k = rand_f32(B * H * T * D), *v = rand_f32(B * H * T * D);
    float *mask = rand_f32(S * T), *want = poisoned_f32(B * H * S * D);
    float *got = poisoned_f32(B * H * S * D), ws[RT_FA_KT_SCRATCH(17, 8)];
    /* float shares the K^T path: the serial bytes are rt_fused_attention_kt_f32's */
    rt_fused_attention_kt_f32(&p, q, k, v, mask, want, ws, 0.35f);
    for (size_t wi = 0; wi < N_WORKERS; wi++) {
        Hook hk = {workers[wi], 1, 0, 0};
        /* >= RT_FA_KT_SCRATCH(T, D) floats, a multiple of 64 bytes */
        const int64_t stride = (RT_FA_KT_SCRATCH(T, D) * (int64_t)sizeof(float) + 63) / 64 * 64;
        unsigned char *scratch = malloc((size_t)(stride * workers[wi]));
        RtPar pp = par_of(&hk, scratch, stride);
        poison(got, B * H * S * D);
        rt_fused_attention_par_f32(&p, q, k, v, mask, got, 0.35f, &pp);
        cr_assert(memcmp(got, want, (size_t)(B * H * S * D) * sizeof *got) == 0,
                  "attention, %d workers: not the serial bytes (seed %u)", workers[wi], rng_seed);
        cr_assert(hk.tasks > 1, "attention did not split");
        free(scratch);
    }
    free(q), free(k), free(v), free(mask), free(want), free(got);
}

Test(rt_par, layernorm_rows_give_the_serial_bytes) {
    /* odd widths (the vector paths' tails), fewer rows than 7 workers' tasks, one row */
    static const int64_t shapes[][2] = {{1464, 47}, {5, 768}, {1, 33}, {130, 16}};
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        rng_init();
        const int64_t rows = shapes[si][0], cols = shapes[si][1], n = rows * cols;
        float *x = rand_f32(n), *g = rand_f32(cols), *b = rand_f32(cols);
        float *want = poisoned_f32(n), *got = poisoned_f32(n);
        float *mw = poisoned_f32(rows), *iw = poisoned_f32(rows);
        float *mg = poisoned_f32(rows), *ig = poisoned_f32(rows);
        rt_layernorm_f32(x, g, b, want, mw, iw, rows, cols, 1, 1, 1e-5f);
        for (size_t wi = 0; wi < N_WORKERS; wi++)
            for (int sh = 0; sh < 2; sh++) {
                Hook hk = {workers[wi], sh, 0, 0};
                RtPar p = par_of(&hk, NULL, 0);
                poison(got, n), poison(mg, rows), poison(ig, rows);
                rt_layernorm_par_f32(x, g, b, got, mg, ig, rows, cols, 1, 1, 1e-5f, &p);
                cr_assert(memcmp(got, want, (size_t)n * sizeof *got) == 0 &&
                              memcmp(mg, mw, (size_t)rows * sizeof *mg) == 0 &&
                              memcmp(ig, iw, (size_t)rows * sizeof *ig) == 0,
                          "layernorm %lldx%lld, %d workers%s: not the serial bytes (seed %u)",
                          (long long)rows, (long long)cols, workers[wi], sh ? " shuffled" : "",
                          rng_seed);
                cr_assert(hk.tasks > 1 || rows == 1, "layernorm did not split");
            }
        free(x), free(g), free(b), free(want), free(got), free(mw), free(iw), free(mg), free(ig);
    }
}

Test(rt_par, binary_maps_give_the_plain_loop_and_serial_bytes) {
    /* (rows, cols, x0's row and column steps, x1's): same shapes merged into one row, a
     * per-channel scale over pixels (x0 broadcast, EfficientNet's SE Mul), a vector along
     * the rows, a column of per-row values, two scalars; fewer rows than tasks */
    static const int64_t cases[][6] = {{1, 98311, 0, 1, 0, 1},  {2867, 24, 0, 1, 24, 1},
                                       {3, 1000, 1000, 1, 0, 1}, {1464, 47, 47, 1, 1, 0},
                                       {37, 41, 0, 0, 0, 0},     {5, 7, 7, 1, 7, 1}};
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++)
        for (int op = RT_BIN_ADD; op <= RT_BIN_DIV; op++) {
            rng_init();
            const int64_t rows = cases[ci][0], cols = cases[ci][1], n = rows * cols;
            const int64_t rs0 = cases[ci][2], cs0 = cases[ci][3], rs1 = cases[ci][4],
                          cs1 = cases[ci][5];
            float *x0 = rand_f32((rows - 1) * rs0 + (cols - 1) * cs0 + 1);
            float *x1 = rand_f32((rows - 1) * rs1 + (cols - 1) * cs1 + 1);
            float *want = poisoned_f32(n), *got = poisoned_f32(n);
            for (int64_t i = 0; i < rows; i++)
                for (int64_t j = 0; j < cols; j++) {
                    const float a = x0[i * rs0 + j * cs0], b = x1[i * rs1 + j * cs1];
                    want[i * cols + j] = op == RT_BIN_ADD ? a + b : op == RT_BIN_SUB ? a - b
                                       : op == RT_BIN_MUL ? a * b : a / b;
                }
            for (size_t wi = 0; wi <= N_WORKERS; wi++)
                for (int sh = 0; sh < 2; sh++) {
                    Hook hk = {wi < N_WORKERS ? workers[wi] : 1, sh, 0, 0};
                    RtPar p = par_of(&hk, NULL, 0);
                    poison(got, n);
                    rt_binary_par_f32(op, x0, rs0, cs0, x1, rs1, cs1, got, rows, cols,
                                      wi < N_WORKERS ? &p : NULL);
                    cr_assert(memcmp(got, want, (size_t)n * sizeof *got) == 0,
                              "binary op %d %lldx%lld, %d workers%s: not the loop's bytes "
                              "(seed %u)", op, (long long)rows, (long long)cols,
                              wi < N_WORKERS ? workers[wi] : 1, sh ? " shuffled" : "", rng_seed);
                    cr_assert(wi == N_WORKERS || hk.tasks > 1, "binary map did not split");
                }
            free(x0), free(x1), free(want), free(got);
        }
}

Test(rt_par, a_null_par_or_one_worker_runs_serially_in_order) {
    Hook hk = {1, 0, 0, 0};
    RtPar p = par_of(&hk, NULL, 0);
    cr_assert_eq(rt_par_chunks(NULL, 100, 1), 1);
    cr_assert_eq(rt_par_chunks(&p, 100, 1), 1);
    p.workers = 3;
    cr_assert_eq(rt_par_chunks(&p, 100, 1), 3 * RT_PAR_TASKS_PER_WORKER);
    cr_assert_eq(rt_par_chunks(&p, 5, 1), 5);
    cr_assert_eq(rt_par_chunks(&p, 100, 4), 3);
}
