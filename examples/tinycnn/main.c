/* tinycnn_demo: classifies one 8x8 grey image with the bundle kiln generates from
 * examples/models/tinycnn.onnx (see CMakeLists.txt). Shows the whole bundle API: the caller
 * owns every buffer (a static, aligned arena; the input and output arrays), the weights are
 * the embedded array tinycnn_weights, and tinycnn_run returns a status code.
 *
 * usage: tinycnn_demo [IMAGE]   IMAGE: 64 raw little-endian float32 pixels, row-major;
 *                               without it a drawn "7" is classified. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "tinycnn.h"

#define SIDE 8      /* the model's input is (1, 1, SIDE, SIDE) */
#define CLASSES 10  /* and its output (1, CLASSES) probabilities */
#define PROB_SUM_TOLERANCE 1e-4 /* softmax outputs add up to 1 within float rounding */

/* The arena: TINYCNN_ARENA_SIZE bytes at a TINYCNN_ALIGN boundary. C99 has no alignas, so
 * take room for one alignment step and round the pointer up. */
static unsigned char arena_room[TINYCNN_ARENA_SIZE + TINYCNN_ALIGN];

static void *aligned_arena(void) {
    uintptr_t p = (uintptr_t)arena_room;
    return arena_room + (TINYCNN_ALIGN - p % TINYCNN_ALIGN) % TINYCNN_ALIGN;
}

static const char *status_name(int rc) {
    switch (rc) {
    case TINYCNN_OK: return "ok";
    case TINYCNN_ERR_NULL: return "a required pointer is NULL";
    case TINYCNN_ERR_ALIGN: return "arena or weights misaligned";
    case TINYCNN_ERR_INDEX: return "index out of range";
    case TINYCNN_ERR_SHAPE: return "shape mismatch";
    case TINYCNN_ERR_VALUE: return "bad input value";
    default: return "unknown status";
    }
}

int main(int argc, char **argv) {
    static const char seven[SIDE][SIDE + 1] = {
        "........", ".######.", "......#.", ".....#..",
        "....#...", "...#....", "...#....", "........"};
    float image[SIDE * SIDE], probs[CLASSES];
    tinycnn_inputs in;
    tinycnn_outputs out;
    double sum = 0.0;
    int i, best = 0, rc;

    if (argc > 2) {
        fprintf(stderr, "usage: %s [IMAGE]\n", argv[0]);
        return 2;
    }
    if (argc == 2) {
        FILE *f = fopen(argv[1], "rb");
        size_t got = f ? fread(image, sizeof image[0], SIDE * SIDE, f) : 0;
        if (f) fclose(f);
        if (got != SIDE * SIDE) {
            fprintf(stderr, "%s: expected %d float32 pixels\n", argv[1], SIDE * SIDE);
            return 2;
        }
    } else {
        for (i = 0; i < SIDE * SIDE; i++) image[i] = seven[i / SIDE][i % SIDE] == '#' ? 1.0f : 0.0f;
    }

    in.image = image;
    out.probs = probs;
    rc = tinycnn_run(&in, &out, tinycnn_weights, aligned_arena());
    if (rc != TINYCNN_OK) {
        fprintf(stderr, "tinycnn_run: status %d (%s)\n", rc, status_name(rc));
        return 1;
    }
    for (i = 0; i < CLASSES; i++) {
        printf("class %d: %.9g\n", i, probs[i]);
        sum += probs[i];
        if (probs[i] > probs[best]) best = i;
    }
    printf("predicted class: %d (arena %d bytes, weights %d bytes embedded)\n", best,
           TINYCNN_ARENA_SIZE, TINYCNN_WEIGHTS_SIZE);
    if (fabs(sum - 1.0) > PROB_SUM_TOLERANCE) {
        fprintf(stderr, "probabilities add up to %f, not 1\n", sum);
        return 1;
    }
    return 0;
}
