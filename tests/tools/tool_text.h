/* Text helpers shared by the test tools that compare printed IR (golden_text, golden_pass,
 * roundtrip): reading a whole file and showing where two texts first differ. Header-only:
 * each tool is one executable. */
#ifndef KILN_TESTS_TOOL_TEXT_H
#define KILN_TESTS_TOOL_TEXT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The whole file, NUL-terminated (malloc'd), its length in *len; NULL when unreadable. */
static inline char *tool_read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap + 1);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            cap *= 2;
            char *b2 = realloc(buf, cap + 1);
            if (!b2) free(buf);
            buf = b2;
        }
    }
    fclose(f);
    if (!buf) return NULL;
    buf[n] = 0;
    *len = n;
    return buf;
}

/* Prints the first line where a and b differ: "  <what> N:" then each side after its label
 * (labels carry their own padding); max_chars > 0 cuts long lines. */
static inline void tool_show_first_difference(const char *a, const char *b, const char *what,
                                              const char *label_a, const char *label_b,
                                              int max_chars) {
    int line = 1;
    const char *la = a, *lb = b;
    while (*a && *a == *b) {
        if (*a == '\n') {
            line++;
            la = a + 1;
            lb = b + 1;
        }
        a++;
        b++;
    }
    int na = (int)strcspn(la, "\n"), nb = (int)strcspn(lb, "\n");
    if (max_chars > 0 && na > max_chars) na = max_chars;
    if (max_chars > 0 && nb > max_chars) nb = max_chars;
    printf("  %s %d:\n    %s%.*s\n    %s%.*s\n", what, line, label_a, na, la, label_b, nb, lb);
}

#endif
