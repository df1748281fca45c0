/* Unit tests of backend/cwriter.c, the indenting writer every emitter writes through:
 * indentation of lines and blocks, comments that stay closed whatever text they carry,
 * long lines, and handing the buffer over with cw_take. Random texts are drawn fresh on
 * every run; the seed is printed in failure messages. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cwriter.h"

#define RANDOM_COMMENTS 2000 /* random comment texts per run */
#define RANDOM_COMMENT_LEN 40
#define DEEP_NESTING 23      /* deeper than the 64-space chunk cw_indent writes at once */

static unsigned test_seed(void) {
    static unsigned seed;
    if (!seed) seed = (unsigned)time(NULL) ^ (unsigned)clock() ^ 0x9e3779b9u;
    return seed;
}

/* Takes the writer's text (the writer is reset); the caller frees it. */
static char *take(CWriter *w) {
    size_t len = 0;
    char *s = cw_take(w, &len);
    cr_assert_not_null(s);
    cr_assert_eq(strlen(s), len, "cw_take's length must match the text");
    return s;
}

Test(cwriter, indents_lines_inside_nested_blocks_and_closes_with_a_suffix) {
    CWriter w;
    cw_init(&w);
    cw_line(&w, "int f(void);");
    cw_open(&w, "int f(void)");
    cw_line(&w, "int x = %d;", 42);
    cw_open(&w, "if (x)");
    cw_line(&w, "x--;");
    cw_close(&w, NULL);
    cw_blank(&w);
    cw_open(&w, "static const int t[2] =");
    cw_line(&w, "%s, %s", "1", "2");
    cw_close(&w, ";");
    cw_line(&w, "return x;");
    cw_close(&w, NULL);
    char *s = take(&w);
    cr_assert_str_eq(s, "int f(void);\n"
                        "int f(void) {\n"
                        "    int x = 42;\n"
                        "    if (x) {\n"
                        "        x--;\n"
                        "    }\n"
                        "\n"
                        "    static const int t[2] = {\n"
                        "        1, 2\n"
                        "    };\n"
                        "    return x;\n"
                        "}\n");
    free(s);
}

Test(cwriter, indents_deeply_nested_blocks_by_four_spaces_a_level) {
    CWriter w;
    cw_init(&w);
    for (int i = 0; i < DEEP_NESTING; i++) cw_open(&w, "b%d", i);
    cw_line(&w, "core;");
    for (int i = 0; i < DEEP_NESTING; i++) cw_close(&w, NULL);
    char *s = take(&w);
    /* line k (0-based) of the opening half is indented 4k; the body 4*DEPTH; closes mirror */
    const char *p = s;
    for (int line = 0; line < 2 * DEEP_NESTING + 1; line++) {
        int depth = line <= DEEP_NESTING ? line : 2 * DEEP_NESTING - line;
        size_t spaces = strspn(p, " ");
        cr_assert_eq(spaces, (size_t)(depth * CW_INDENT_SPACES), "line %d: %zu spaces", line,
                     spaces);
        const char *e = strchr(p, '\n');
        cr_assert_not_null(e);
        p = e + 1;
    }
    cr_assert_eq(*p, 0);
    free(s);
}

Test(cwriter, closing_more_blocks_than_were_opened_stays_at_column_zero) {
    CWriter w;
    cw_init(&w);
    cw_close(&w, ";");
    cw_line(&w, "x");
    char *s = take(&w);
    cr_assert_str_eq(s, "};\nx\n");
    free(s);
}

Test(cwriter, raw_text_is_not_indented_and_builds_one_line_in_pieces) {
    CWriter w;
    cw_init(&w);
    w.indent = 2;
    cw_indent(&w);
    cw_raw(&w, "if (a");
    for (int i = 0; i < 3; i++) cw_raw(&w, " || b%d", i);
    cw_raw(&w, ") return;\n");
    cw_blank(&w);
    char *s = take(&w);
    cr_assert_str_eq(s, "        if (a || b0 || b1 || b2) return;\n\n");
    free(s);
}

Test(cwriter, writes_lines_longer_than_its_stack_buffer_and_its_first_block) {
    enum { LONG = 10000 }; /* > the 512-byte format buffer and the 4096-byte first block */
    char *text = malloc(LONG + 1);
    srand(test_seed());
    for (int i = 0; i < LONG; i++) text[i] = (char)('a' + rand() % 26);
    text[LONG] = 0;
    CWriter w;
    cw_init(&w);
    cw_open(&w, "x");
    cw_line(&w, "%s", text);
    cw_close(&w, NULL);
    char *s = take(&w);
    cr_assert_eq(strncmp(s, "x {\n    ", 8), 0);
    cr_assert_eq(memcmp(s + 8, text, LONG), 0, "seed %u", test_seed());
    cr_assert_str_eq(s + 8 + LONG, "\n}\n");
    free(s);
    free(text);
}

Test(cwriter, keeps_a_comment_that_contains_the_closing_sequence_closed) {
    CWriter w;
    cw_init(&w);
    w.indent = 1;
    cw_comment(&w, "node 'a*/b' */ x = 1; /* **/");
    char *s = take(&w);
    /* one line: opens once, closes once, at its end */
    cr_assert_eq(strncmp(s, "    /* ", 7), 0, "%s", s);
    const char *close = strstr(s, "*/");
    cr_assert_not_null(close);
    cr_assert_str_eq(close, "*/\n", "the comment must close only at its end: %s", s);
    free(s);
}

/* Checks one line of cw_comment output made from `text` (no newline in it): indentation,
 * one opening and one closing, the text kept character for character except where it had
 * to change. */
static void check_comment_line(const char *line, size_t line_len, const char *text,
                               size_t text_len, int indent, unsigned seed) {
    size_t pre = (size_t)indent * CW_INDENT_SPACES;
    cr_assert_eq(line_len, pre + 3 + text_len + 3, "seed %u: length of '%.*s'", seed,
                 (int)line_len, line);
    for (size_t i = 0; i < pre; i++) cr_assert_eq(line[i], ' ');
    cr_assert_eq(memcmp(line + pre, "/* ", 3), 0);
    cr_assert_eq(memcmp(line + line_len - 3, " */", 3), 0);
    const char *body = line + pre + 3;
    for (size_t i = 0; i < text_len; i++) {
        unsigned char c = (unsigned char)text[i], o = (unsigned char)body[i];
        cr_assert(o >= 0x20 && o < 0x7f, "seed %u: unprintable byte 0x%02x kept", seed, o);
        if (c >= 0x20 && c < 0x7f && c != '*' && c != '/')
            cr_assert_eq(o, c, "seed %u: '%c' changed to '%c'", seed, c, o);
    }
    /* inside the comment body plus its closing space, "*" "/" never meet */
    for (size_t i = 0; i + 1 < text_len + 1; i++)
        cr_assert(!(body[i] == '*' && body[i + 1] == '/'),
                  "seed %u: comment closes early in '%.*s'", seed, (int)line_len, line);
}

Test(cwriter, keeps_random_comment_texts_closed_and_printable_line_by_line) {
    static const char alphabet[] = "**//ab \n\t\x01\xe9";
    unsigned seed = test_seed();
    srand(seed);
    for (int round = 0; round < RANDOM_COMMENTS; round++) {
        char text[RANDOM_COMMENT_LEN + 1];
        int len = 1 + rand() % RANDOM_COMMENT_LEN;
        for (int i = 0; i < len; i++) text[i] = alphabet[rand() % (int)(sizeof alphabet - 1)];
        text[len] = 0;
        int indent = rand() % 4;
        CWriter w;
        cw_init(&w);
        w.indent = indent;
        cw_comment(&w, "%s", text);
        cr_assert_eq(w.indent, indent, "a comment must not change the indentation");
        char *out = take(&w);
        /* one output line per newline-separated piece of the text (a trailing newline
         * adds none) */
        const char *t = text, *o = out;
        while (*t) {
            const char *te = strchr(t, '\n');
            size_t tn = te ? (size_t)(te - t) : strlen(t);
            const char *oe = strchr(o, '\n');
            cr_assert_not_null(oe, "seed %u: missing line for '%s'", seed, text);
            check_comment_line(o, (size_t)(oe - o), t, tn, indent, seed);
            o = oe + 1;
            t += tn;
            if (*t == '\n') t++;
        }
        cr_assert_eq(*o, 0, "seed %u: extra output for '%s': '%s'", seed, text, o);
        free(out);
    }
}

/* gcc -Wall (-Wcomment) warns about a comment opening ("/" then "*") inside a comment, and
 * the generated code must build with -Werror: a node named like that must not break it. */
Test(cwriter, keeps_an_opening_sequence_out_of_comments) {
    CWriter w;
    cw_init(&w);
    cw_comment(&w, "node '/*conv*/' and /*/ and //*");
    char *s = take(&w);
    const char *open = strstr(s + 2, "/*");
    cr_assert_null(open, "a nested comment opening makes gcc -Wall -Werror fail: %s", s);
    free(s);
}

Test(cwriter, writes_nothing_for_an_empty_comment) {
    CWriter w;
    cw_init(&w);
    cw_comment(&w, "%s", "");
    cr_assert_eq(w.len, 0u);
    cw_free(&w);
}

Test(cwriter, take_hands_over_the_text_and_resets_the_writer) {
    CWriter w;
    cw_init(&w);
    cw_open(&w, "a");
    cw_line(&w, "b;");
    size_t len = 0;
    char *s = cw_take(&w, &len);
    cr_assert_str_eq(s, "a {\n    b;\n");
    cr_assert_eq(len, strlen("a {\n    b;\n"));
    /* reset: empty, unindented, usable again, and independent of the taken buffer */
    cr_assert_null(w.buf);
    cr_assert_eq(w.len, 0u);
    cr_assert_eq(w.indent, 0);
    cr_assert(!w.failed);
    cw_line(&w, "c;");
    char *t = take(&w);
    cr_assert_str_eq(t, "c;\n");
    cr_assert_str_eq(s, "a {\n    b;\n");
    free(s);
    free(t);
}

Test(cwriter, take_of_an_empty_writer_gives_an_empty_string) {
    CWriter w;
    cw_init(&w);
    size_t len = 99;
    char *s = cw_take(&w, &len);
    cr_assert_not_null(s);
    cr_assert_str_eq(s, "");
    cr_assert_eq(len, 0u);
    free(s);
    cw_init(&w);
    s = cw_take(&w, NULL); /* the length is optional */
    cr_assert_str_eq(s, "");
    free(s);
}
