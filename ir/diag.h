/* Diagnostics: errors and warnings about the user's model, collected so that all problems
 * are reported at once. Every layer reports through a Diag; none prints or exits itself. */
#ifndef KILN_DIAG_H
#define KILN_DIAG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

typedef enum DiagLevel { DIAG_NOTE, DIAG_WARNING, DIAG_ERROR } DiagLevel;

typedef struct DiagMsg {
    DiagLevel level;
    char *text;
} DiagMsg;

typedef struct Diag {
    DiagMsg *msgs;
    unsigned n_msgs, cap_msgs;
    unsigned n_errors;
    unsigned max_msgs; /* messages kept; later ones are counted only (0: 1000) */
    unsigned n_dropped;
} Diag;

void diag_init(Diag *d);
void diag_free(Diag *d);
#if defined(__GNUC__)
#define DIAG_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define DIAG_PRINTF(a, b)
#endif
void diag_error(Diag *d, const char *fmt, ...) DIAG_PRINTF(2, 3);
void diag_warning(Diag *d, const char *fmt, ...) DIAG_PRINTF(2, 3);
void diag_note(Diag *d, const char *fmt, ...) DIAG_PRINTF(2, 3);
void diag_vadd(Diag *d, DiagLevel level, const char *fmt, va_list ap);
bool diag_has_errors(const Diag *d);
/* Writes "kiln: error: ..." lines, with prefix before each (e.g. the model path). */
void diag_print(const Diag *d, FILE *out, const char *prefix);

#endif
