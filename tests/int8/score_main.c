/* Top-1 accuracy of a classifier bundle named "net" (input 'image' f32[1,...], output
 * 'logits' f32[1,K]) over a labelled set: IMAGES is N images of net's input size, float32,
 * back to back; LABELS is N uint8 labels. Prints "correct N". Built against the bundle by
 * tests/bundle/test_int8_accuracy.sh: cc -I BUNDLE score_main.c BUNDLE/net.c -lm.
 * usage: score WEIGHTS IMAGES LABELS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "net.h"

static void *read_file(const char *path, size_t align, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    size_t cap = ((size_t)(n > 0 ? n : 1) + align - 1) / align * align;
    void *p = aligned_alloc(align, cap);
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return p;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s WEIGHTS IMAGES LABELS\n", argv[0]);
        return 2;
    }
    size_t wsize, xsize, ysize;
    void *w = read_file(argv[1], NET_ALIGN, &wsize);
    float *x = read_file(argv[2], 64, &xsize);
    uint8_t *y = read_file(argv[3], 64, &ysize);
    void *arena = aligned_alloc(NET_ALIGN, (NET_ARENA_SIZE + NET_ALIGN - 1) / NET_ALIGN * NET_ALIGN + NET_ALIGN);
    static float logits[10]; /* K = 10 classes */
    if (!w || !x || !y || !arena) {
        fprintf(stderr, "score: cannot read the inputs\n");
        return 1;
    }
    size_t per = xsize / ysize / sizeof(float), correct = 0;
    for (size_t i = 0; i < ysize; i++) {
        net_inputs in = {.image = x + i * per};
        net_outputs out = {.logits = logits};
        if (net_run(&in, &out, w, arena) != NET_OK) return 1;
        int best = 0;
        for (int k = 1; k < 10; k++)
            if (logits[k] > logits[best]) best = k;
        correct += best == y[i];
    }
    printf("correct %zu %zu\n", correct, ysize);
    free(w);
    free(x);
    free(y);
    free(arena);
    return 0;
}
