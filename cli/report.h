/* kiln compile --report FILE.html: one self-contained HTML page (inline CSS and SVG, no
 * script, no network: its Content-Security-Policy forbids any load) about one compile:
 * the model, the passes with node counts before and after each, the compiled nodes (op,
 * shapes, MACs, arena offsets, the model nodes each was made from), the memory plan as a
 * timeline (each arena tensor a bar over its lifetime at its offset) and, for quantized
 * builds, the per-layer error.
 *
 * Use: cli_report_new on the loaded graph; cli_report_observe as PassOptions.observe (with
 * the report as observe_arg) while the compile driver runs; cli_report_write on the
 * compiled graph. The report follows the graph from pass to pass itself (which nodes were
 * folded, fused, inserted): the passes need to tell it nothing. */
#ifndef KILN_CLI_REPORT_H
#define KILN_CLI_REPORT_H

#include <stdbool.h>

#include "ir/ir.h"

typedef struct CliReport CliReport;

/* What the page states about the compile besides the graph. */
typedef struct CliReportInfo {
    const char *model;   /* the model's path */
    const char *name;    /* the bundle's name */
    const char *target;  /* "c", "cuda" */
    const char *out_dir; /* the bundle's folder */
    int argc;            /* the command's arguments, for the record (argv[0]: "compile") */
    char **argv;
} CliReportInfo;

/* A report for g as loaded (before the passes); NULL when memory runs out. */
CliReport *cli_report_new(const IrGraph *g);
void cli_report_free(CliReport *r);

/* PassOptions.observe: records pass `pass` of the pipeline (arg is the CliReport). */
void cli_report_observe(void *arg, const IrGraph *g, unsigned pass, bool after);

/* The hook for quantized builds: one point of the per-layer error plot, the error of the
 * quantized layer's output against the float model's (relative RMS error, in the order of
 * the layers). Calibration (not written yet) is to call it; until then no build has
 * points, and the page says that the build is not quantized. The name is copied. */
bool cli_report_layer_error(CliReport *r, const char *layer, double rel_rms_error);

/* Writes the page for the compiled (planned) graph g to path; false (with a message on
 * stderr) when the file cannot be written. */
bool cli_report_write(CliReport *r, const IrGraph *g, const CliReportInfo *info,
                      const char *path);

#endif
