/* kiln_pool.c: the pool of kiln_pool.h. A call publishes (fn, arg) and one range of task
 * indices a worker, then bumps the generation (release) and wakes the threads that sleep;
 * every worker, the caller too, takes the tasks of its own range in order, then those left in
 * the others' ranges. A worker joins the call first (a count in `state`), and once the caller
 * has run out of tasks it closes the call and waits only for the workers that joined to leave
 * (`left`, release/acquire: the tasks' writes are visible then): a worker that a loaded
 * machine kept off its core never joins, and does not hold the call up for its time slice. A thread that waits, a worker for the next
 * call or the caller for the workers' end, polls (the generation, `left`) while the threads it
 * waits for are on a core, at most KILN_POOL_SPIN_US, then sleeps (kiln_pool.h says why).
 *
 * Why ranges and not one shared counter: the kernels cut their outputs into tasks in order
 * (rows, pixel blocks), and consecutive layers of a model cut alike, so with a fixed range
 * worker w computes the same part of the image in every layer and finds its input in its own
 * core's cache (L2) where the layer before left it; one counter hands tasks to whichever
 * worker comes first, and half the input then crosses between cores. The taking from the
 * others' ranges keeps the balance when tasks cost unequal or a thread starts late. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "kiln_pool.h"

#include <time.h>

static long long us_of(clockid_t clock) {
    struct timespec t;
    if (clock_gettime(clock, &t) != 0) return -1;
    return (long long)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* A new call was published (worker) or every worker that joined the call has left (caller). */
static int ready(KilnPool *p, int caller, unsigned long long seen) {
    if (caller) return atomic_load_explicit(&p->left, memory_order_acquire) == p->joined;
    return atomic_load_explicit(&p->generation, memory_order_acquire) != seen;
}

/* CPU time, in microseconds, of the threads that the waiter waits for: the caller's (a worker
 * waits for the next call: `last_caller`, the thread of the call it worked on last) or the
 * workers' together (the caller waits for their end); -1 where the system cannot tell. */
static long long cpu_us(pthread_t thread) {
    clockid_t clock;
    return pthread_getcpuclockid(thread, &clock) == 0 ? us_of(clock) : -1;
}
static long long others_cpu_us(KilnPool *p, int caller, pthread_t last_caller) {
    long long sum = 0, t;
    int i;
    if (!caller) return cpu_us(last_caller);
    for (i = 1; i < p->n; i++) {
        if ((t = cpu_us(p->thread[i])) < 0) return -1;
        sum += t;
    }
    return sum;
}

/* Polls ready() while it pays: 1 when it holds, 0 when the thread should sleep instead, that
 * is after KILN_POOL_SPIN_US, or sooner when the threads it waits for got less than half a
 * core over each of the last two KILN_POOL_CHECK_US (kiln_pool.h: they are off their cores,
 * and polling may be what keeps them off; one short window is an interrupt as often). */
static int poll_ready(KilnPool *p, int caller, unsigned long long seen, pthread_t last_caller) {
    const long long t0 = us_of(CLOCK_MONOTONIC);
    long long t_check = t0, cpu_check = others_cpu_us(p, caller, last_caller);
    int spin, off = 0; /* windows in a row in which the others got less than half a core */
    for (;;) {
        long long t;
        for (spin = 0; spin < KILN_POOL_POLLS; spin++)
            if (ready(p, caller, seen)) return 1;
        t = us_of(CLOCK_MONOTONIC);
        if (t - t0 >= KILN_POOL_SPIN_US) return 0;
        if (t - t_check >= KILN_POOL_CHECK_US && cpu_check >= 0) {
            long long cpu = others_cpu_us(p, caller, last_caller);
            off = cpu >= 0 && 2 * (cpu - cpu_check) < t - t_check ? off + 1 : 0;
            if (off == 2) return 0;
            t_check = t, cpu_check = cpu;
        }
    }
}

/* Takes the tasks of worker v's range until none is left there. */
static void drain_range(KilnPool *p, int v, int worker) {
    KilnPoolRange *r = &p->range[v];
    for (;;) {
        long long i = atomic_fetch_add_explicit(&r->next, 1, memory_order_relaxed);
        if (i >= r->end) return;
        p->fn(p->arg, (int64_t)i, worker);
    }
}

/* Takes tasks until none is left: its own range first, then the others' in turn. */
static void drain(KilnPool *p, int worker) {
    int k;
    for (k = 0; k < p->n; k++) drain_range(p, (worker + k) % p->n, worker);
}

/* Joins call `id` unless it is closed (its caller ran out of tasks first) or over: 1 if it did.
 * The state's count of joined workers tells the caller whom to wait for. */
static int join(KilnPool *p, unsigned long long id) {
    unsigned long long s = atomic_load_explicit(&p->state, memory_order_acquire);
    while (s / KILN_POOL_STATE_ID == id && !(s & KILN_POOL_CLOSED))
        if (atomic_compare_exchange_weak_explicit(&p->state, &s, s + 1, memory_order_acq_rel,
                                                  memory_order_acquire))
            return 1;
    return 0;
}

static void *thread_main(void *arg) {
    KilnPoolSeat *seat = (KilnPoolSeat *)arg;
    KilnPool *p = seat->pool;
    unsigned long long seen = 0;
    pthread_t last_caller = seat->starter; /* until a call: kiln_pool_init's thread */
    for (;;) {
        if (!poll_ready(p, 0, seen, last_caller)) {
            pthread_mutex_lock(&p->lock);
            while (atomic_load_explicit(&p->generation, memory_order_acquire) == seen)
                pthread_cond_wait(&p->wake, &p->lock);
            pthread_mutex_unlock(&p->lock);
        }
        seen = atomic_load_explicit(&p->generation, memory_order_acquire);
        if (atomic_load_explicit(&p->stop, memory_order_relaxed)) return NULL;
        if (!join(p, seen)) continue; /* done without us: nothing to count out of */
        last_caller = p->caller;      /* stable until we leave: the caller waits for that */
        drain(p, seat->worker);
        atomic_fetch_add_explicit(&p->left, 1, memory_order_release);
        pthread_mutex_lock(&p->lock);
        pthread_cond_signal(&p->done);
        pthread_mutex_unlock(&p->lock);
    }
}

int kiln_pool_init(KilnPool *p, int n) {
    int i;
    if (n < 1 || n > KILN_POOL_MAX) return -1;
    p->n = 1;
    p->fn = 0;
    p->arg = 0;
    atomic_init(&p->generation, 0);
    atomic_init(&p->state, 0);
    atomic_init(&p->left, 0);
    p->joined = 0;
    atomic_init(&p->stop, 0);
    p->caller = pthread_self();
    for (i = 0; i < KILN_POOL_MAX; i++) {
        atomic_init(&p->range[i].next, 0);
        p->range[i].end = 0;
    }
    if (pthread_mutex_init(&p->lock, NULL) != 0) return -1;
    if (pthread_cond_init(&p->wake, NULL) != 0 || pthread_cond_init(&p->done, NULL) != 0)
        return -1;
    for (i = 1; i < n; i++) {
        p->seat[i].pool = p;
        p->seat[i].worker = i;
        p->seat[i].starter = pthread_self();
        if (pthread_create(&p->thread[i], NULL, thread_main, &p->seat[i]) != 0) {
            kiln_pool_destroy(p); /* the threads started so far */
            return -1;
        }

        p->n = i + 1;
    }
    return 0;
}

/* Publishes a new generation and wakes the sleepers. */
static void kick(KilnPool *p) {
    pthread_mutex_lock(&p->lock);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
}

void kiln_pool_for(void *ctx, int64_t n_tasks, KilnPoolTask fn, void *arg) {
    KilnPool *p = (KilnPool *)ctx;
    int w;
    if (p->n == 1 || n_tasks <= 1) { /* nothing to share: no wake-up */
        int64_t i;
        for (i = 0; i < n_tasks; i++) fn(arg, i, 0);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    p->caller = pthread_self();
    for (w = 0; w < p->n; w++) { /* worker w: [n_tasks * w / n, n_tasks * (w + 1) / n) */
        atomic_store_explicit(&p->range[w].next, n_tasks * w / p->n, memory_order_relaxed);
        p->range[w].end = n_tasks * (w + 1) / p->n;
    }
    atomic_store_explicit(&p->left, 0, memory_order_relaxed);
    /* the call's state: open, nobody joined (release: the fields above go with it) */
    atomic_store_explicit(&p->state,
                          (atomic_load_explicit(&p->generation, memory_order_relaxed) + 1) *
                              KILN_POOL_STATE_ID,
                          memory_order_release);
    kick(p);
    drain(p, 0);
    /* no task is left to take: close the call, and wait for those who joined it to leave */
    p->joined = (int)(atomic_fetch_or_explicit(&p->state, KILN_POOL_CLOSED, memory_order_acq_rel) &
                      KILN_POOL_JOINED);
    if (poll_ready(p, 1, 0, p->caller)) return;
    pthread_mutex_lock(&p->lock);
    while (atomic_load_explicit(&p->left, memory_order_acquire) < p->joined)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

void kiln_pool_destroy(KilnPool *p) {
    int i;
    atomic_store_explicit(&p->stop, 1, memory_order_relaxed);
    kick(p);
    for (i = 1; i < p->n; i++) pthread_join(p->thread[i], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->lock);
}
