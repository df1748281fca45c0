/* One run of a Kiln int8 bundle NAME (compiled with -DBENCH_NAME=NAME -include NAME.h, one
 * float input field `input` of BENCH_INPUT_ELEMS, one float output field `output` of
 * BENCH_OUTPUT_ELEMS) on bench_main.c's seeded input, its output written raw to OUT_FILE:
 * for bench/int8/icount.sh, which compares two kilns' bundles byte for byte and counts
 * their instructions under callgrind.
 *   same_main WEIGHTS_FILE OUT_FILE */
#include <stdio.h>
#include <stdlib.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)

static void *alloc_aligned(size_t size) {
    size_t rounded = (size + BENCH_ALIGN - 1) / BENCH_ALIGN * BENCH_ALIGN;
    return aligned_alloc(BENCH_ALIGN, rounded ? rounded : BENCH_ALIGN);
}

int main(int argc, char **argv) {
    static float input[BENCH_INPUT_ELEMS], output[BENCH_OUTPUT_ELEMS];
    CAT(BENCH_NAME, _inputs) in;
    CAT(BENCH_NAME, _outputs) out;
    unsigned s = 12345u;
    void *weights, *arena;
    FILE *f;
    size_t i;
    if (argc != 3) {
        fprintf(stderr, "usage: %s WEIGHTS_FILE OUT_FILE\n", argv[0]);
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
    free(weights);
    free(arena);
    return 0;
}
