/* rt_par.h: how kernels share their work among the workers of a parallel-for hook that the
 * bundle's user owns (NAME_run_parallel, docs/bundle.md). The bundle starts no threads: a
 * kernel cuts its output into tasks and hands them to the hook, which runs fn(arg, i, w)
 * for every task i on some worker w < workers and returns when all are done.
 *
 * The contract that keeps results byte-identical for any worker count and any schedule:
 * a task owns whole output tiles and computes each of them exactly as the serial loop does
 * (same reduction order, same blocking); no reduction is ever split between tasks. So the
 * number of tasks may follow the worker count, but no output byte does.
 *
 * Per-worker scratch (a kernel's row of scores, say) lives in the caller's arena: worker w
 * owns scratch + w * scratch_stride bytes, sized at compile time (NAME_WORKERS).
 *
 * A kernel splits like this (rt_pgemm.h, rt_matmul.h, rt_conv_nhwc.h, rt_fusedattn.h):
 *     struct MyTask { ...the arguments...; int64_t per_task; };
 *     static void my_task(void *arg, int64_t i, int w) { ...tiles of task i... }
 *     rt_par_run(par, n_tasks, my_task, &t);
 * with n_tasks from rt_par_chunks. par NULL (or one worker) runs the tasks in order on the
 * calling thread, worker 0. C99, no libc. */
#ifndef KILN_RT_PAR_H
#define KILN_RT_PAR_H

#include "rt_common.h"

#ifndef RT_PAR_TASKS_PER_WORKER /* a -D to try others */
#define RT_PAR_TASKS_PER_WORKER 4 /* tasks a worker gets: evens out tiles of unequal cost
                                     and workers that the OS delays, at little overhead */
#endif

/* The hook's types; NAME_task_fn and NAME_parallel_for_fn of a bundle's header are these. */
typedef void (*RtTaskFn)(void *arg, int64_t task, int worker);
typedef void (*RtParallelFor)(void *ctx, int64_t n_tasks, RtTaskFn fn, void *arg);

typedef struct RtPar {
    RtParallelFor pfor; /* NULL: serial */
    void *ctx;          /* the hook's own argument */
    int workers;        /* worker ids the hook may pass are 0 .. workers-1 */
    unsigned char *scratch;   /* per-worker scratch: worker w's at scratch + w * stride */
    int64_t scratch_stride;   /* bytes, a multiple of 64 */
} RtPar;

/* Runs fn(arg, i, w) for i in [0, n): through the hook when there is one and more than one
 * task, else in order here as worker 0. */
RT_API void rt_par_run(const RtPar *par, int64_t n, RtTaskFn fn, void *arg) {
    int64_t i;
    if (par && par->pfor && par->workers > 1 && n > 1) {
        par->pfor(par->ctx, n, fn, arg);
        return;
    }
    for (i = 0; i < n; i++) fn(arg, i, 0);
}

/* How many chunks to cut `units` equal units of work into: one without workers, else up
 * to RT_PAR_TASKS_PER_WORKER per worker (fewer when `others` tasks already run beside). */
RT_API int64_t rt_par_chunks(const RtPar *par, int64_t units, int64_t others) {
    int64_t want;
    if (!par || !par->pfor || par->workers <= 1 || units <= 1) return 1;
    want = (int64_t)par->workers * RT_PAR_TASKS_PER_WORKER;
    want = others > 1 ? (want + others - 1) / others : want;
    return want < 1 ? 1 : want > units ? units : want;
}

/* Where part i of `units` cut into n even parts begins (part i: [rt_par_part(u, n, i),
 * rt_par_part(u, n, i + 1))): parts differ by at most one unit, so that n a multiple of the
 * workers gives each worker's range of tasks (kiln_pool deals contiguous ranges) an equal
 * share; and two kernels that cut the same rows into the same n give worker w the same rows
 * (the depthwise layers and the 1x1 products around them: rt_conv_nhwc.h, rt_pgemm.h). */
RT_API int64_t rt_par_part(int64_t units, int64_t n, int64_t i) {
    return units * i / n;
}

/* Worker w's scratch. */
RT_API void *rt_par_scratch(const RtPar *par, int worker) {
    return par->scratch + (int64_t)worker * par->scratch_stride;
}

#endif
