/* kiln_pool.h: a persistent pthreads pool that serves as the parallel-for hook of Kiln
 * bundles (NAME_run_parallel, docs/bundle.md). Threads start once, in kiln_pool_init, and
 * poll, then sleep, between calls. A call deals the tasks out in contiguous ranges, one a
 * worker, the calling thread working as worker 0; a worker whose range runs dry takes tasks
 * from the others' ranges. Not part of any bundle: an example to copy or adapt
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
/* How long a waiting thread polls before it sleeps. Polling pays on an idle machine: the
 * kernels of one model follow each other within tens of microseconds (more where a node runs
 * serially or a worker ends its share early), and a sleeping thread takes about as long to
 * wake (a futex wake-up; on a VM an interrupt to an idle vCPU), on every call where it slept:
 * a fixed 20000 polls (~7 us) lost MobileNetV2 most of its second core. Polling ruins a
 * loaded machine: with more runnable threads than cores, the thread it waits for may be the
 * one its polling keeps off a core, for a whole time slice a call (300 us of polling made
 * MobileNetV2 three to five times slower at load 8 on 2 cores), while a sleeper that a futex
 * wakes gets a core back at once. So a thread polls only while the threads it waits for run:
 * it reads their CPU-time clocks (pthread_getcpuclockid) and sleeps as soon as they got less
 * than half a core, over two looks in a row: a thread that runs flat out looks off its core
 * over one 10 us window now and then (an interrupt, a VM exit: measured 18-20 times a second
 * on the 2-vCPU KVM guest, 60-84 on a 16-vCPU Xeon guest), over two in a row 0-8 times.
 * The budget covers the longest task of a model that every call waits for in part: BERT-base's
 * and ViT's products cut into 8 tasks of 0.2-0.75 ms, where a thread that ran out of tasks
 * waited for the other's last one beyond 500 us, slept, and a wake-up (on a VM: of a halted
 * vCPU, whose physical core the host may have given away) came on top. */
#ifndef KILN_POOL_SPIN_US /* -DKILN_POOL_SPIN_US=N to tune; ~5 is the old 20000 polls */
#define KILN_POOL_SPIN_US 2000 /* polling at most: longer than a product's task in BERT */
#endif
#ifndef KILN_POOL_CHECK_US
#define KILN_POOL_CHECK_US 10 /* between two looks at the others' CPU time (a system call) */
#endif
#define KILN_POOL_POLLS 256   /* polls between two reads of the clock (~0.1 us) */

#define KILN_POOL_JOINED 127u   /* KilnPool.state: the count of workers that joined */
#define KILN_POOL_CLOSED 128u   /* KilnPool.state: no more may join */
#define KILN_POOL_STATE_ID 256u /* KilnPool.state: the call's generation, times this */

typedef void (*KilnPoolTask)(void *arg, int64_t task, int worker);

/* One worker's share of a call's tasks: [next, end), taken from the front by its owner and,
 * once their own are done, by the others. A cache line each: workers count on their own. */
typedef struct KilnPoolRange {
    atomic_llong next;
    long long end;
    char pad[64 - 2 * sizeof(long long)];
} KilnPoolRange;

typedef struct KilnPool KilnPool;
typedef struct KilnPoolSeat {
    KilnPool *pool;
    int worker;               /* 1 .. n-1: the caller is worker 0 */
    pthread_t starter;        /* the thread that ran kiln_pool_init */
} KilnPoolSeat;

struct KilnPool {
    int n;                    /* workers, the caller included */
    pthread_t thread[KILN_POOL_MAX];
    KilnPoolSeat seat[KILN_POOL_MAX];
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    atomic_ullong generation; /* bumped for each call: wakes the threads */
    atomic_ullong state;      /* the call: generation * KILN_POOL_STATE_ID, KILN_POOL_CLOSED
                                 once the caller ran out of tasks, + the workers that joined */
    atomic_int left;          /* joined workers that are done with the call */
    int joined;               /* the caller's copy of the count at closing */
    atomic_int stop;
    pthread_t caller;         /* the thread of the latest call */
    /* the call in progress */
    KilnPoolTask fn;
    void *arg;
    KilnPoolRange range[KILN_POOL_MAX]; /* worker w's share of the tasks */
};

/* Starts n - 1 threads (n workers in all, 1 <= n <= KILN_POOL_MAX); 0 on success. */
int kiln_pool_init(KilnPool *p, int n);
/* The hook: runs fn(arg, i, w) for i in [0, n_tasks) on workers 0 <= w < n, returns when
 * all are done. ctx is the KilnPool. */
void kiln_pool_for(void *ctx, int64_t n_tasks, KilnPoolTask fn, void *arg);
/* Stops and joins the threads. */
void kiln_pool_destroy(KilnPool *p);

#endif
