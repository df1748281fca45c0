/* par_shim.c: lets a bundle's generated NAME_test_main.c run NAME_run_parallel. Build the
 * test main with -DNAME_run=par_shim_run (its call, and the prototype it sees, take this
 * file's name) and this file with -DMODEL=NAME -DMODEL_H='"NAME.h"'. KILN_PAR_MODE picks
 * the run:
 *   serial    NAME_run itself
 *   pool      NAME_run_parallel on examples/parallel's pthreads pool of KILN_PAR_THREADS
 *             threads (default NAME_WORKERS)
 *   reverse   a hook that runs the tasks last to first on one thread, worker ids cycling
 *             over 0 .. NAME_WORKERS-1
 *   shuffle   a hook that runs them in a random order (seed KILN_PAR_SEED) with random
 *             worker ids
 * Every hook checks its call: n_tasks >= 1, fn non-NULL, each task run exactly once, and
 * (pool) the worker ids the pool passes in range; a broken rule exits with status 3. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_pool.h"

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#include MODEL_H

#define WORKERS CAT(MODEL_UPPER, _WORKERS)

typedef struct Check {
    KilnPoolTask fn;
    void *arg;
    unsigned char *seen; /* per task: how often it ran */
    int threads;
} Check;

static void die(const char *what) {
    fprintf(stderr, "par_shim: %s\n", what);
    exit(3);
}

/* Runs the task through to the bundle, checking the worker id first. */
static void checked_task(void *arg, int64_t task, int worker) {
    Check *c = (Check *)arg;
    if (worker < 0 || worker >= c->threads || worker >= WORKERS) die("worker id out of range");
    c->seen[task]++; /* each task's own byte: no two workers write one */
    c->fn(c->arg, task, worker);
}

static Check begin(int64_t n_tasks, KilnPoolTask fn, void *arg, int threads) {
    Check c;
    if (n_tasks < 1 || !fn) die("a call with no tasks or no function");
    c.fn = fn;
    c.arg = arg;
    c.threads = threads;
    c.seen = (unsigned char *)calloc((size_t)n_tasks, 1);
    if (!c.seen) die("out of memory");
    return c;
}

static void end(Check *c, int64_t n_tasks) {
    int64_t i;
    for (i = 0; i < n_tasks; i++)
        if (c->seen[i] != 1) die("a task ran other than once");
    free(c->seen);
}

static KilnPool pool;
static int pool_threads;

static void pool_for(void *ctx, int64_t n_tasks, KilnPoolTask fn, void *arg) {
    Check c = begin(n_tasks, fn, arg, pool_threads);
    kiln_pool_for(ctx, n_tasks, checked_task, &c);
    end(&c, n_tasks);
}

static void reverse_for(void *ctx, int64_t n_tasks, KilnPoolTask fn, void *arg) {
    Check c = begin(n_tasks, fn, arg, WORKERS);
    int64_t i;
    (void)ctx;
    for (i = n_tasks - 1; i >= 0; i--) checked_task(&c, i, (int)((n_tasks - 1 - i) % WORKERS));
    end(&c, n_tasks);
}

static unsigned long long rng_state;
static unsigned long long rng_next(void) { /* splitmix64 */
    unsigned long long z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static void shuffle_for(void *ctx, int64_t n_tasks, KilnPoolTask fn, void *arg) {
    Check c = begin(n_tasks, fn, arg, WORKERS);
    int64_t *order = (int64_t *)malloc((size_t)n_tasks * sizeof *order), i;
    (void)ctx;
    if (!order) die("out of memory");
    for (i = 0; i < n_tasks; i++) order[i] = i;
    for (i = n_tasks - 1; i > 0; i--) {
        int64_t j = (int64_t)(rng_next() % (unsigned long long)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (i = 0; i < n_tasks; i++) checked_task(&c, order[i], (int)(rng_next() % WORKERS));
    free(order);
    end(&c, n_tasks);
}

static void stop_pool(void) { kiln_pool_destroy(&pool); }

int par_shim_run(const CAT(MODEL, _inputs) * in, CAT(MODEL, _outputs) * out,
                 const void *weights, void *arena) {
    const char *mode = getenv("KILN_PAR_MODE");
    if (!mode || strcmp(mode, "serial") == 0) return CAT(MODEL, _run)(in, out, weights, arena);
    if (strcmp(mode, "pool") == 0) {
        if (!pool_threads) {
            const char *t = getenv("KILN_PAR_THREADS");
            pool_threads = t ? atoi(t) : WORKERS;
            if (pool_threads < 1 || pool_threads > WORKERS) die("KILN_PAR_THREADS out of range");
            if (kiln_pool_init(&pool, pool_threads) != 0) die("kiln_pool_init failed");
            atexit(stop_pool);
        }
        return CAT(MODEL, _run_parallel)(in, out, weights, arena, pool_for, &pool);
    }
    if (strcmp(mode, "reverse") == 0)
        return CAT(MODEL, _run_parallel)(in, out, weights, arena, reverse_for, NULL);
    if (strcmp(mode, "shuffle") == 0) {
        const char *s = getenv("KILN_PAR_SEED");
        rng_state = s ? strtoull(s, NULL, 10) : 1;
        return CAT(MODEL, _run_parallel)(in, out, weights, arena, shuffle_for, NULL);
    }
    die("unknown KILN_PAR_MODE");
    return 1;
}
