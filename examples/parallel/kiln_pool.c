/* kiln_pool.c: the pool of kiln_pool.h. A call publishes (fn, arg, n_tasks), then bumps the
 * generation (release) and wakes the threads that sleep; every worker, the caller too, takes
 * task indices from one atomic counter until they run out; the caller returns when every
 * thread has counted itself out of `busy` (acq_rel: the tasks' writes are visible then).
 * Between calls a thread polls the generation KILN_POOL_SPIN times before it sleeps. */
#include "kiln_pool.h"

/* Takes tasks until none is left. */
static void drain(KilnPool *p, int worker) {
    for (;;) {
        long long i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (i >= p->n_tasks) return;
        p->fn(p->arg, (int64_t)i, worker);
    }
}

static void *thread_main(void *arg) {
    KilnPoolSeat *seat = (KilnPoolSeat *)arg;
    KilnPool *p = seat->pool;
    unsigned long long seen = 0;
    for (;;) {
        int spin;
        for (spin = 0; spin < KILN_POOL_SPIN; spin++)
            if (atomic_load_explicit(&p->generation, memory_order_acquire) != seen) break;
        if (spin == KILN_POOL_SPIN) {
            pthread_mutex_lock(&p->lock);
            while (atomic_load_explicit(&p->generation, memory_order_acquire) == seen)
                pthread_cond_wait(&p->wake, &p->lock);
            pthread_mutex_unlock(&p->lock);
        }
        seen = atomic_load_explicit(&p->generation, memory_order_acquire);
        if (atomic_load_explicit(&p->stop, memory_order_relaxed)) return NULL;
        drain(p, seat->worker);
        if (atomic_fetch_sub_explicit(&p->busy, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->lock);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->lock);
        }
    }
}

int kiln_pool_init(KilnPool *p, int n) {
    int i;
    if (n < 1 || n > KILN_POOL_MAX) return -1;
    p->n = 1;
    p->fn = 0;
    p->arg = 0;
    p->n_tasks = 0;
    atomic_init(&p->generation, 0);
    atomic_init(&p->busy, 0);
    atomic_init(&p->stop, 0);
    atomic_init(&p->next, 0);
    if (pthread_mutex_init(&p->lock, NULL) != 0) return -1;
    if (pthread_cond_init(&p->wake, NULL) != 0 || pthread_cond_init(&p->done, NULL) != 0)
        return -1;
    for (i = 1; i < n; i++) {
        p->seat[i].pool = p;
        p->seat[i].worker = i;
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
    int spin;
    if (p->n == 1 || n_tasks <= 1) { /* nothing to share: no wake-up */
        int64_t i;
        for (i = 0; i < n_tasks; i++) fn(arg, i, 0);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    p->n_tasks = n_tasks;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    atomic_store_explicit(&p->busy, p->n - 1, memory_order_relaxed);
    kick(p);
    drain(p, 0);
    for (spin = 0; spin < KILN_POOL_SPIN; spin++)
        if (atomic_load_explicit(&p->busy, memory_order_acquire) == 0) return;
    pthread_mutex_lock(&p->lock);
    while (atomic_load_explicit(&p->busy, memory_order_acquire) > 0)
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
