/* kiln_pool.h: a persistent pthreads pool that serves as the parallel-for hook of Kiln
 * bundles (NAME_run_parallel, docs/bundle.md). Threads start once, in kiln_pool_init, and
 * poll, then sleep, between calls; each call hands the tasks out through one atomic counter, the
 * calling thread working as worker 0. Not part of any bundle: an example to copy or adapt
 * (an RTOS, OpenMP or a job system of your own can implement the same hook).
 *
 *     KilnPool pool;
 *     kiln_pool_init(&pool, MODEL_WORKERS);
 *     model_run_parallel(&in, &out, weights, arena, kiln_pool_for, &pool);
 *     kiln_pool_destroy(&pool);
 *
 * One call at a time per pool (a bundle's kernels call it one after another). C11. */
#ifndef KILN_POOL_H
#define KILN_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define KILN_POOL_MAX 64 /* threads a pool may hold */
#define KILN_POOL_SPIN 20000 /* polls of the next call before a thread sleeps (some tens of
                                microseconds): kernels of one model follow each other closely,
                                and a sleeping thread takes longer to wake than that */

typedef void (*KilnPoolTask)(void *arg, int64_t task, int worker);

typedef struct KilnPool KilnPool;
typedef struct KilnPoolSeat {
    KilnPool *pool;
    int worker;               /* 1 .. n-1: the caller is worker 0 */
} KilnPoolSeat;

struct KilnPool {
    int n;                    /* workers, the caller included */
    pthread_t thread[KILN_POOL_MAX];
    KilnPoolSeat seat[KILN_POOL_MAX];
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    atomic_ullong generation; /* bumped for each call: wakes the threads */
    atomic_int busy;          /* threads still working on this generation */
    atomic_int stop;
    /* the call in progress */
    KilnPoolTask fn;
    void *arg;
    int64_t n_tasks;
    atomic_llong next;        /* the next task to hand out */
};

/* Starts n - 1 threads (n workers in all, 1 <= n <= KILN_POOL_MAX); 0 on success. */
int kiln_pool_init(KilnPool *p, int n);
/* The hook: runs fn(arg, i, w) for i in [0, n_tasks) on workers 0 <= w < n, returns when
 * all are done. ctx is the KilnPool. */
void kiln_pool_for(void *ctx, int64_t n_tasks, KilnPoolTask fn, void *arg);
/* Stops and joins the threads. */
void kiln_pool_destroy(KilnPool *p);

#endif
