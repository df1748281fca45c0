/* digits_eval: classifies every image of the held-out digits test split with the bundle kiln
 * generates from digits.onnx (see CMakeLists.txt), prints the accuracy and, when asked,
 * writes one predicted class per line. The caller owns all memory: a static aligned arena,
 * one image and one logits array; the weights are the embedded array digits_weights.
 *
 * usage: digits_eval TEST_SPLIT [PREDICTIONS]
 *   TEST_SPLIT: digits_test.bin as train.py writes it ("KDG1", uint32 N, N*64 float32
 *   pixels, N uint8 labels, little-endian; this program assumes a little-endian host). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "digits.h"

#define PIXELS 64          /* the model's input is (1, 1, 8, 8) */
#define CLASSES 10         /* and its output (1, CLASSES) logits */
#define MAX_IMAGES 4096    /* bounds the split read from the file: the test split has 360 */
#define MAGIC "KDG1"
#define MAGIC_LEN 4

/* C99 has no alignas: take room for one alignment step and round the pointer up. */
static unsigned char arena_room[DIGITS_ARENA_SIZE + DIGITS_ALIGN];
static float images[MAX_IMAGES][PIXELS];
static unsigned char labels[MAX_IMAGES];

static void *aligned_arena(void) {
    uintptr_t p = (uintptr_t)arena_room;
    return arena_room + (DIGITS_ALIGN - p % DIGITS_ALIGN) % DIGITS_ALIGN;
}

/* Reads the split; returns the number of images, or -1 with a message. */
static long read_split(const char *path) {
    unsigned char head[MAGIC_LEN + 4];
    unsigned long n;
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    if (fread(head, 1, sizeof head, f) != sizeof head || memcmp(head, MAGIC, MAGIC_LEN) != 0) {
        fprintf(stderr, "%s: not a digits test split (no %s header)\n", path, MAGIC);
        fclose(f);
        return -1;
    }
    n = (unsigned long)head[4] | (unsigned long)head[5] << 8 | (unsigned long)head[6] << 16 |
        (unsigned long)head[7] << 24;
    if (n == 0 || n > MAX_IMAGES || fread(images, sizeof images[0], n, f) != n ||
        fread(labels, 1, n, f) != n) {
        fprintf(stderr, "%s: bad or truncated split (%lu images)\n", path, n);
        fclose(f);
        return -1;
    }
    fclose(f);
    return (long)n;
}

int main(int argc, char **argv) {
    float logits[CLASSES];
    digits_inputs in;
    digits_outputs out;
    FILE *pred = NULL;
    long n, i, correct = 0;
    int c, best, rc;

    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s TEST_SPLIT [PREDICTIONS]\n", argv[0]);
        return 2;
    }
    n = read_split(argv[1]);
    if (n < 0) return 2;
    if (argc == 3 && !(pred = fopen(argv[2], "w"))) {
        perror(argv[2]);
        return 2;
    }
    out.logits = logits;
    for (i = 0; i < n; i++) {
        if (labels[i] >= CLASSES) {
            fprintf(stderr, "image %ld: label %d out of range\n", i, labels[i]);
            return 2;
        }
        in.image = images[i];
        rc = digits_run(&in, &out, digits_weights, aligned_arena());
        if (rc != DIGITS_OK) {
            fprintf(stderr, "image %ld: digits_run status %d\n", i, rc);
            return 1;
        }
        best = 0;
        for (c = 1; c < CLASSES; c++)
            if (logits[c] > logits[best]) best = c;
        correct += best == labels[i];
        if (pred) fprintf(pred, "%d\n", best);
    }
    if (pred && fclose(pred) != 0) {
        perror(argv[2]);
        return 2;
    }
    printf("C bundle accuracy: %.4f (%ld/%ld), arena %d bytes, weights %d bytes embedded\n",
           (double)correct / (double)n, correct, n, DIGITS_ARENA_SIZE, DIGITS_WEIGHTS_SIZE);
    return 0;
}
