/* Diagnostics collection: see diag.h. */
#include "diag.h"

#include <stdlib.h>
#include <string.h>

#define DIAG_DEFAULT_MAX 1000 /* enough for every unsupported op of any real model */

void diag_init(Diag *d) { memset(d, 0, sizeof *d); }

void diag_free(Diag *d) {
    for (unsigned i = 0; i < d->n_msgs; i++) free(d->msgs[i].text);
    free(d->msgs);
    memset(d, 0, sizeof *d);
}

void diag_vadd(Diag *d, DiagLevel level, const char *fmt, va_list ap) {
    unsigned max = d->max_msgs ? d->max_msgs : DIAG_DEFAULT_MAX;
    if (level == DIAG_ERROR) d->n_errors++;
    if (d->n_msgs >= max) {
        d->n_dropped++;
        return;
    }
    va_list ap2;
    va_copy(ap2, ap);
    int len = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (len < 0) len = 0;
    char *text = malloc((size_t)len + 1);
    if (!text) return;
    vsnprintf(text, (size_t)len + 1, fmt, ap);
    if (d->n_msgs == d->cap_msgs) {
        unsigned cap = d->cap_msgs ? d->cap_msgs * 2 : 16;
        DiagMsg *m = realloc(d->msgs, cap * sizeof *m);
        if (!m) {
            free(text);
            return;
        }
        d->msgs = m;
        d->cap_msgs = cap;
    }
    d->msgs[d->n_msgs].level = level;
    d->msgs[d->n_msgs].text = text;
    d->n_msgs++;
}

#define DIAG_DEFINE(fn, level)                                                            \
    void fn(Diag *d, const char *fmt, ...) {                                              \
        va_list ap;                                                                       \
        va_start(ap, fmt);                                                                \
        diag_vadd(d, level, fmt, ap);                                                     \
        va_end(ap);                                                                       \
    }
DIAG_DEFINE(diag_error, DIAG_ERROR)
DIAG_DEFINE(diag_warning, DIAG_WARNING)
DIAG_DEFINE(diag_note, DIAG_NOTE)

bool diag_has_errors(const Diag *d) { return d->n_errors > 0; }

void diag_print(const Diag *d, FILE *out, const char *prefix) {
    static const char *const level_names[] = {"note", "warning", "error"};
    for (unsigned i = 0; i < d->n_msgs; i++)
        fprintf(out, "%s%s%s: %s\n", prefix ? prefix : "", prefix ? ": " : "",
                level_names[d->msgs[i].level], d->msgs[i].text);
    if (d->n_dropped) fprintf(out, "%s%s(%u more messages not shown)\n", prefix ? prefix : "",
                              prefix ? ": " : "", d->n_dropped);
}
