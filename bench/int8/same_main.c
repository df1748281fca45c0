/* One run of a Kiln int8 bundle NAME (compiled with -DBENCH_NAME=NAME -include NAME.h, one
 * float input field `input` of BENCH_INPUT_ELEMS, one float output field `output` of
 * BENCH_OUTPUT_ELEMS) on bench_main.c's seeded input, its output written raw to OUT_FILE:
 * for bench/int8/icount.sh, which compares two kilns' bundles byte for byte and counts
 * their instructions under callgrind. With RUNS, it then times RUNS more runs and prints
 * the median and minimum in CPU time of the thread (CLOCK_THREAD_CPUTIME_ID: on a shared,
 * loaded machine a run's wall-clock time counts the time it waited for a core) and the
 * median wall-clock time, for bench/int8/run.sh. Build with -D_POSIX_C_SOURCE=200809L.
 *   same_main WEIGHTS_FILE OUT_FILE [RUNS] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)

#define SAME_MAX_RUNS 1000

static double now_ms(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void *alloc_aligned(size_t size) {
    size_t rounded = (size + BENCH_ALIGN - 1) / BENCH_ALIGN * BENCH_ALIGN;
    return aligned_alloc(BENCH_ALIGN, rounded ? rounded : BENCH_ALIGN);
}

int main(int argc, char **argv) {
    static float input[BENCH_INPUT_ELEMS], output[BENCH_OUTPUT_ELEMS];
    CAT(BENCH_NAME, _inputs) in;
    CAT(BENCH_NAME, _outputs) out;
    unsigned s = 12345u;
    static double cpu[SAME_MAX_RUNS], wall[SAME_MAX_RUNS];
    void *weights, *arena;
    FILE *f;
    size_t i;
    int runs = argc == 4 ? atoi(argv[3]) : 0, r;
    if ((argc != 3 && argc != 4) || runs < 0 || runs > SAME_MAX_RUNS) {
        fprintf(stderr, "usage: %s WEIGHTS_FILE OUT_FILE [RUNS]\n", argv[0]);
        return 2;
    }
    weights = alloc_aligned(BENCH_WEIGHTS_SIZE);
    arena = alloc_aligned(BENCH_ARENA_SIZE);
    f = fopen(argv[1], "rb");
    if (!weights || !arena || !f) return 1;
    if (fread(weights, 1, BENCH_WEIGHTS_SIZE, f) != (size_t)BENCH_WEIGHTS_SIZE) return 1;
    fclose(f);
    for (i = 0; i < BENCH_INPUT_ELEMS; i++) { /* bench_main.c's input */
        s = s * 1103515245u + 12345u;
        input[i] = (float)((s >> 8) & 0xffff) / 65536.0f * 2.0f - 1.0f;
    }
    in.input = input;
    out.output = output;
    if (CAT(BENCH_NAME, _run)(&in, &out, weights, arena) != 0) return 1;
    f = fopen(argv[2], "wb");
    if (!f || fwrite(output, sizeof output, 1, f) != 1 || fclose(f) != 0) return 1;
    for (r = 0; r < runs; r++) {
        double c0 = now_ms(CLOCK_THREAD_CPUTIME_ID), w0 = now_ms(CLOCK_MONOTONIC);
        CAT(BENCH_NAME, _run)(&in, &out, weights, arena);
        wall[r] = now_ms(CLOCK_MONOTONIC) - w0;
        cpu[r] = now_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
    }
    if (runs > 0) {
        qsort(cpu, (size_t)runs, sizeof cpu[0], cmp_double);
        qsort(wall, (size_t)runs, sizeof wall[0], cmp_double);
        printf("cpu_median_ms=%.3f cpu_min_ms=%.3f wall_median_ms=%.3f\n", cpu[runs / 2], cpu[0], wall[runs / 2]);
    }
    free(weights);
    free(arena);
    return 0;
}
