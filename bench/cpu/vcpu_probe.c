/* vcpu_probe: the round trip of one cache line between two CPUs (default 0 and 1), in ns:
 * two threads pinned to them hand a counter back and forth (release store, acquire load),
 * 200000 times in batches of 100; the fastest batch's mean, so that a batch where another
 * process took either CPU (a loaded machine) does not count. On this 2-vCPU EPYC guest it
 * reads ~50 ns while the host runs both vCPUs on one CCD (one L3) and ~280-360 ns while they
 * sit on two (each its own L3; the guest's lscpu shows one L3 either way), and the host moves
 * them every 20-60 s; every two-thread timing (Kiln and ONNX Runtime alike) follows:
 * MobileNetV2 4.1 ms against 7.1 (bench/cpu/parallel-profile.md, par4). Run it beside a two-thread benchmark to know which
 * level the benchmark ran on. Prints JSON: round_trip_ns.
 * Build: cc -O2 -pthread bench/cpu/vcpu_probe.c -o vcpu_probe; usage: vcpu_probe [CPU_A CPU_B] */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROUNDS 200000
#define BATCH 100

static _Alignas(64) atomic_long flag;

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* The far side: answers each odd value with the next even one. */
static void *pong(void *arg) {
    long i;
    (void)arg;
    for (i = 0; i < ROUNDS; i++) {
        while (atomic_load_explicit(&flag, memory_order_acquire) != 2 * i + 1) {
        }
        atomic_store_explicit(&flag, 2 * i + 2, memory_order_release);
    }
    return NULL;
}

int main(int argc, char **argv) {
    const int a = argc > 2 ? atoi(argv[1]) : 0, b = argc > 2 ? atoi(argv[2]) : 1;
    double best = 1e30;
    cpu_set_t here, there;
    pthread_attr_t attr;
    CPU_ZERO(&here);
    CPU_SET(a, &here);
    CPU_ZERO(&there);
    CPU_SET(b, &there);
    /* the far thread starts on its CPU: pinned after it starts, a SCHED_FIFO caller spinning
     * on the same CPU would keep it from ever running */
    if (pthread_setaffinity_np(pthread_self(), sizeof here, &here) != 0 ||
        pthread_attr_init(&attr) != 0 ||
        pthread_attr_setaffinity_np(&attr, sizeof there, &there) != 0) {
        fprintf(stderr, "vcpu_probe: cannot pin to CPUs %d and %d\n", a, b);
        return 2;
    }
    {
        pthread_t t;
        double t0 = 0;
        long i;
        atomic_store(&flag, 0);
        if (pthread_create(&t, &attr, pong, NULL) != 0) return 2;
        for (i = 0; i < ROUNDS; i++) {
            if (i % BATCH == 0) {
                const double t1 = now_ns();
                if (i > 0 && (t1 - t0) / BATCH < best) best = (t1 - t0) / BATCH;
                t0 = t1;
            }
            atomic_store_explicit(&flag, 2 * i + 1, memory_order_release);
            while (atomic_load_explicit(&flag, memory_order_acquire) != 2 * i + 2) {
            }
        }
        pthread_join(t, NULL);
    }
    printf("{\"round_trip_ns\": %.1f, \"cpus\": [%d, %d]}\n", best, a, b);
    return 0;
}
