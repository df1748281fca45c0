/* The progress line (progress.h): "\r" and "erase to end of line" (ECMA-48 EL, which every
 * terminal emulator in use understands) rewrite one line in place; the line is cut to
 * PROGRESS_COLUMNS so that it never wraps on an 80-column terminal. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"

#define PROGRESS_COLUMNS 79  /* one short of 80: a full last column would wrap on some */
#define PROGRESS_ERASE "\033[K" /* erase from the cursor to the end of the line */

double cli_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cli_progress_init(CliProgress *p, const char *cmd, bool quiet) {
    p->on = !quiet && isatty(STDERR_FILENO);
    p->shown = false;
    p->cmd = cmd;
    p->t0_s = cli_seconds();
}

void cli_progress_show(CliProgress *p, const char *fmt, ...) {
    if (!p->on) return;
    char text[PROGRESS_COLUMNS + 1];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    char line[2 * PROGRESS_COLUMNS + 64]; /* room for all of it; cut when printed */
    snprintf(line, sizeof line, "kiln %s: %s (%.1f s)", p->cmd, text, cli_seconds() - p->t0_s);
    fprintf(stderr, "\r%.*s" PROGRESS_ERASE, PROGRESS_COLUMNS, line);
    fflush(stderr);
    p->shown = true;
}

void cli_progress_end(CliProgress *p) {
    if (!p->shown) return;
    fputs("\r" PROGRESS_ERASE, stderr);
    fflush(stderr);
    p->shown = false;
}
