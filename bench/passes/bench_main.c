/* Timing harness for bench/passes/run.sh: runs a Kiln bundle NAME (compiled with -DBENCH_NAME=
 * NAME -include NAME.h) whose one input field is `input` and one output field `logits` (or,
 * with -DBENCH_SEQ=N, a token model: int64 `input_ids` and `attention_mask` of N elements,
 * output field `output`), on fresh random input, RUNS times after one warm-up run, and
 * prints the median and minimum latency in milliseconds and a checksum of the output (to
 * compare passes on and off).
 *   bench_main WEIGHTS_FILE RUNS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define BN_INPUTS CAT(BENCH_NAME, _inputs)
#define BN_OUTPUTS CAT(BENCH_NAME, _outputs)
#define BN_RUN CAT(BENCH_NAME, _run)

#define BENCH_MAX_RUNS 5000
#define BENCH_SEED 12345u

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
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
    if (argc != 3) {
        fprintf(stderr, "usage: %s WEIGHTS_FILE RUNS\n", argv[0]);
        return 2;
    }
    int runs = atoi(argv[2]);
    if (runs < 1 || runs > BENCH_MAX_RUNS) return 2;
    void *weights = alloc_aligned(BENCH_WEIGHTS_SIZE);
    void *arena = alloc_aligned(BENCH_ARENA_SIZE);
    FILE *f = fopen(argv[1], "rb");
    if (!weights || !arena || !f) return 1;
    size_t got = fread(weights, 1, BENCH_WEIGHTS_SIZE, f);
    fclose(f);
    if (got != (size_t)BENCH_WEIGHTS_SIZE) return 1;
    static float logits[BENCH_OUTPUT_ELEMS];
    unsigned s = BENCH_SEED;
    BN_INPUTS in;
    BN_OUTPUTS out;
#ifdef BENCH_SEQ /* token ids in [0, BENCH_VOCAB), the last quarter of positions padding */
    static int64_t ids[BENCH_SEQ], mask[BENCH_SEQ];
    for (size_t i = 0; i < BENCH_SEQ; i++) {
        s = s * 1103515245u + 12345u;
        ids[i] = (int64_t)((s >> 8) % BENCH_VOCAB);
        mask[i] = i < BENCH_SEQ - BENCH_SEQ / 4;
    }
    in.input_ids = ids;
    in.attention_mask = mask;
    out.output = logits;
#else
    static float input[BENCH_INPUT_ELEMS];
    for (size_t i = 0; i < BENCH_INPUT_ELEMS; i++) {
        s = s * 1103515245u + 12345u;
        input[i] = (float)((s >> 8) & 0xffff) / 65536.0f * 2.0f - 1.0f;
    }
    in.input = input;
    out.logits = logits;
#endif
    static double t[BENCH_MAX_RUNS];
    if (BN_RUN(&in, &out, weights, arena) != 0) return 1;
    for (int r = 0; r < runs; r++) {
        double t0 = now_ms();
        BN_RUN(&in, &out, weights, arena);
        t[r] = now_ms() - t0;
    }
    qsort(t, (size_t)runs, sizeof t[0], cmp_double);
    double sum = 0;
    for (size_t i = 0; i < BENCH_OUTPUT_ELEMS; i++) sum += logits[i];
    printf("median_ms=%.3f min_ms=%.3f checksum=%.6g\n", t[runs / 2], t[0], sum);
    free(weights);
    free(arena);
    return 0;
}
