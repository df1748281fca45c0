/* A progress line for long work (kiln compile's passes; later calibration and validation
 * over many inputs): one line on stderr, rewritten in place, shown only when stderr is a
 * terminal and the user did not ask for --quiet, and erased when the work ends, so that
 * diagnostics and results start on a clean line. Piped or redirected output gets nothing. */
#ifndef KILN_CLI_PROGRESS_H
#define KILN_CLI_PROGRESS_H

#include <stdbool.h>

typedef struct CliProgress {
    bool on;         /* stderr is a terminal and not quiet */
    bool shown;      /* a line is on the screen */
    const char *cmd; /* "compile": the line starts "kiln compile: " */
    double t0_s;     /* when the work began (monotonic seconds) */
} CliProgress;

void cli_progress_init(CliProgress *p, const char *cmd, bool quiet);
/* Replaces the line by "kiln CMD: TEXT (T s)". */
void cli_progress_show(CliProgress *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Erases the line (call before printing anything else). */
void cli_progress_end(CliProgress *p);
/* Monotonic seconds, for the timings of the report and the progress line. */
double cli_seconds(void);

#endif
