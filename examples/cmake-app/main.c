/* cmake_app: classifies the first images of the held-out digits split with the bundle that
 * kiln_add_model built (CMakeLists.txt) and prints each predicted class next to its label.
 * The weights are the embedded array digits_weights, or, when the library was built with
 * WEIGHTS bin, the file whose path it passes on as DIGITS_WEIGHTS_FILE.
 *
 * usage: cmake_app [TEST_SPLIT [N]]   (default: the split named at configure time, 8 images)
 *   TEST_SPLIT: "KDG1", uint32 count, count*64 float32 pixels, count uint8 labels (LE). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digits.h"

#define PIXELS 64  /* the model's input is (1, 1, 8, 8) */
#define CLASSES 10 /* its output (1, 10) logits */
#define MAX_SHOWN 64
#define HEADER_BYTES 8 /* "KDG1" and the count */

/* C99 has no alignas: room for one alignment step, the pointer rounded up. */
static unsigned char arena_room[DIGITS_ARENA_SIZE + DIGITS_ALIGN];
#ifdef DIGITS_WEIGHTS_FILE
static unsigned char weights_room[DIGITS_WEIGHTS_SIZE + DIGITS_ALIGN];
#endif

static void *aligned(unsigned char *room) {
    uintptr_t p = (uintptr_t)room;
    return room + (DIGITS_ALIGN - p % DIGITS_ALIGN) % DIGITS_ALIGN;
}

/* The bundle's weights: embedded, or read from the file the library names. */
static const void *load_weights(void) {
#ifdef DIGITS_WEIGHTS_FILE
    void *w = aligned(weights_room);
    FILE *f = fopen(DIGITS_WEIGHTS_FILE, "rb");
    size_t got = f ? fread(w, 1, DIGITS_WEIGHTS_SIZE, f) : 0;
    if (f) fclose(f);
    if (got != DIGITS_WEIGHTS_SIZE) {
        fprintf(stderr, "%s: cannot read %d bytes of weights\n", DIGITS_WEIGHTS_FILE,
                DIGITS_WEIGHTS_SIZE);
        return NULL;
    }
    printf("weights: %d bytes from %s\n", DIGITS_WEIGHTS_SIZE, DIGITS_WEIGHTS_FILE);
    return w;
#else
    printf("weights: %d bytes embedded\n", DIGITS_WEIGHTS_SIZE);
    return digits_weights;
#endif
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : DIGITS_TEST_SPLIT;
    long want = argc > 2 ? strtol(argv[2], NULL, 10) : 8;
    unsigned char head[HEADER_BYTES];
    float logits[CLASSES];
    unsigned char labels[MAX_SHOWN];
    static float images[MAX_SHOWN][PIXELS];
    unsigned long n;
    long i;
    int c;

    const void *weights = load_weights();
    if (!weights) return 1;
    FILE *f = fopen(path, "rb");
    if (!f || fread(head, 1, sizeof head, f) != sizeof head || memcmp(head, "KDG1", 4) != 0) {
        fprintf(stderr, "%s: not a digits test split\n", path);
        return 2;
    }
    n = (unsigned long)head[4] | (unsigned long)head[5] << 8 | (unsigned long)head[6] << 16 |
        (unsigned long)head[7] << 24;
    if (want < 1 || want > MAX_SHOWN || (unsigned long)want > n) want = n < 8 ? (long)n : 8;
    /* the first `want` images, then, past all n images, their labels */
    if (fread(images, sizeof images[0], (size_t)want, f) != (size_t)want ||
        fseek(f, (long)(HEADER_BYTES + n * PIXELS * sizeof(float)), SEEK_SET) != 0 ||
        fread(labels, 1, (size_t)want, f) != (size_t)want) {
        fprintf(stderr, "%s: truncated\n", path);
        fclose(f);
        return 2;
    }
    fclose(f);
    for (i = 0; i < want; i++) {
        digits_inputs in;
        digits_outputs out;
        int best = 0, rc;
        in.image = images[i];
        out.logits = logits;
        rc = digits_run(&in, &out, weights, aligned(arena_room));
        if (rc != DIGITS_OK) {
            fprintf(stderr, "image %ld: digits_run status %d\n", i, rc);
            return 1;
        }
        for (c = 1; c < CLASSES; c++)
            if (logits[c] > logits[best]) best = c;
        printf("image %ld: predicted %d, label %d\n", i, best, labels[i]);
    }
    return 0;
}
