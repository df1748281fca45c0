/* The C-like writer shared by the C and CUDA dialects: an output buffer with indentation
 * handling, so no emitter places tabs by hand. Lines are written with cw_line (printf-style);
 * cw_open/cw_close bracket a block and indent its body. */
#ifndef KILN_BACKEND_CWRITER_H
#define KILN_BACKEND_CWRITER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#define CW_INDENT_SPACES 4

typedef struct CWriter {
    char *buf;
    size_t len, cap;
    int indent;
    bool failed; /* out of memory: every later call is a no-op */
} CWriter;

void cw_init(CWriter *w);
void cw_free(CWriter *w);
#if defined(__GNUC__)
#define CW_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CW_PRINTF(a, b)
#endif
/* One indented line; the newline is added. */
void cw_line(CWriter *w, const char *fmt, ...) CW_PRINTF(2, 3);
/* Raw text, no indentation or newline (for building a line in pieces). */
void cw_raw(CWriter *w, const char *fmt, ...) CW_PRINTF(2, 3);
void cw_vraw(CWriter *w, const char *fmt, va_list ap);
void cw_indent(CWriter *w);      /* writes the current indentation only */
void cw_blank(CWriter *w);       /* an empty line */
/* "<line> {" then indent; cw_close dedents and writes "}" plus suffix (e.g. ";"). */
void cw_open(CWriter *w, const char *fmt, ...) CW_PRINTF(2, 3);
void cw_close(CWriter *w, const char *suffix);
/* A comment, split on newlines; text is made safe for a C comment. */
void cw_comment(CWriter *w, const char *fmt, ...) CW_PRINTF(2, 3);
/* One comment holding text, broken at spaces so that no line passes width columns; lines
 * after the first start with " *   ". */
void cw_comment_wrapped(CWriter *w, int width, const char *text);
/* Takes the buffer (NUL-terminated, malloc'd); the writer is reset. */
char *cw_take(CWriter *w, size_t *len_out);
/* Whether C text uses identifier word outside comments (not as part of a longer identifier
 * nor as a member after '.' or '->'). */
bool cw_uses_word(const char *text, const char *word);

#endif
