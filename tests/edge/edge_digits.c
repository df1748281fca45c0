/* edge_digits: the digits bundle over the 360 held-out images, for the edge tests. The
 * same source runs on x86-64 and ARM Linux (under qemu-user) and bare-metal on a Cortex-M
 * (under qemu-system-arm, stdio through semihosting): it streams the split one image at a
 * time (so that it needs little RAM), prints the accuracy with integer arithmetic only (no
 * float printf in newlib-nano) and writes every image's logits, which tests/edge/compare.py
 * compares across the machines. Weights: the embedded array (kiln --weights embed).
 *
 * usage: edge_digits TEST_SPLIT LOGITS_OUT
 *   TEST_SPLIT: examples/digits/digits_test.bin ("KDG1", uint32 n, n*64 float32 pixels, n
 *   uint8 labels, little-endian; every machine here is little-endian)
 *   LOGITS_OUT: n*10 float32, the logits of each image in order
 * With EDGE_STACK_PROBE (the Cortex-M build) it also reports the stack digits_run used,
 * measured by painting (tests/edge/mcu/startup.c). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "digits.h"

#define PIXELS 64        /* the input is (1, 1, 8, 8) */
#define CLASSES 10       /* the output (1, 10) logits */
#define MAX_IMAGES 512   /* labels held in RAM: the split has 360 */
#define HEADER_BYTES 8   /* "KDG1" and the count */
#define ACCURACY_DIGITS 10000 /* accuracy printed as 0.dddd */

#ifdef EDGE_STACK_PROBE
#include "mcu/stack_probe.h"
#endif

/* The arena, aligned as the bundle asks (GNU C: every compiler these tests use). */
static unsigned char arena[DIGITS_ARENA_SIZE] __attribute__((aligned(DIGITS_ALIGN)));
static unsigned char labels[MAX_IMAGES];

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int main(int argc, char **argv) {
    unsigned char head[HEADER_BYTES];
    float image[PIXELS], logits[CLASSES];
    digits_inputs in;
    digits_outputs out;
    uint32_t n, i, correct = 0;
    int c, rc;
#ifdef EDGE_STACK_PROBE
    uint32_t run_stack = 0;
#endif

    if (argc != 3) {
        fprintf(stderr, "usage: %s TEST_SPLIT LOGITS_OUT\n", argc ? argv[0] : "edge_digits");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    FILE *o = fopen(argv[2], "wb");
    if (!f || !o) {
        fprintf(stderr, "cannot open %s or %s\n", argv[1], argv[2]);
        return 2;
    }
    if (fread(head, 1, sizeof head, f) != sizeof head || memcmp(head, "KDG1", 4) != 0 ||
        (n = le32(head + 4)) == 0 || n > MAX_IMAGES ||
        fseek(f, (long)(HEADER_BYTES + n * PIXELS * sizeof(float)), SEEK_SET) != 0 ||
        fread(labels, 1, n, f) != n || fseek(f, HEADER_BYTES, SEEK_SET) != 0) {
        fprintf(stderr, "%s: not a digits test split\n", argv[1]);
        return 2;
    }
    in.image = image;
    out.logits = logits;
    for (i = 0; i < n; i++) {
        if (fread(image, sizeof image, 1, f) != 1) {
            fprintf(stderr, "%s: truncated at image %lu\n", argv[1], (unsigned long)i);
            return 2;
        }
#ifdef EDGE_STACK_PROBE
        stack_probe_paint();
#endif
        rc = digits_run(&in, &out, digits_weights, arena);
#ifdef EDGE_STACK_PROBE
        if (stack_probe_used() > run_stack) run_stack = stack_probe_used();
#endif
        if (rc != DIGITS_OK) {
            fprintf(stderr, "image %lu: digits_run status %d\n", (unsigned long)i, rc);
            return 1;
        }
        int best = 0;
        for (c = 1; c < CLASSES; c++)
            if (logits[c] > logits[best]) best = c;
        correct += (uint32_t)(best == labels[i]);
        if (fwrite(logits, sizeof logits, 1, o) != 1) {
            fprintf(stderr, "%s: cannot write\n", argv[2]);
            return 2;
        }
    }
    fclose(f);
    if (fclose(o) != 0) {
        fprintf(stderr, "%s: cannot write\n", argv[2]);
        return 2;
    }
    uint32_t frac = (uint32_t)(((uint64_t)correct * ACCURACY_DIGITS + n / 2) / n);
    printf("accuracy: %lu.%04lu (%lu/%lu)\n", (unsigned long)(frac / ACCURACY_DIGITS),
           (unsigned long)(frac % ACCURACY_DIGITS), (unsigned long)correct, (unsigned long)n);
#ifdef EDGE_STACK_PROBE
    printf("digits_run stack: %lu bytes (painted, most over %lu runs)\n",
           (unsigned long)run_stack, (unsigned long)n);
#endif
    return 0;
}
