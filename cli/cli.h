/* Shared pieces of the kiln command: the subcommand table entry, exit codes, and the
 * options every model-reading command takes (--dim, loading with diagnostics). Only cli/
 * includes this; nothing here is needed by a library user. */
#ifndef KILN_CLI_H
#define KILN_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "frontend/onnx.h"

/* Exit codes of every subcommand (docs/cli.md lists them). */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_MODEL = 1, /* the model is malformed or unsupported; diagnostics on stderr */
    CLI_EXIT_USAGE = 2, /* unknown command or flag, missing or malformed argument */
};

/* One subcommand: one row of the table in main.c. run gets argv[0] = the command name. */
typedef struct CliCommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary; /* one line for `kiln --help` */
    const char *help;    /* the full text for `kiln help NAME` and `kiln NAME --help` */
} CliCommand;

/* The subcommands (one file each: cli/inspect.c, cli/compile.c, cli/validate.c). */
int cli_inspect_run(int argc, char **argv);
extern const char cli_inspect_help[];
int cli_compile_run(int argc, char **argv);
extern const char cli_compile_help[];
int cli_validate_run(int argc, char **argv);
extern const char cli_validate_help[];

/* Reports a usage error of command cmd ("kiln" for the top level) on stderr and returns
 * CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Matches argv[*i] against a flag that takes a value, as "--flag VALUE" or "--flag=VALUE".
 * Returns 1 and sets *value (advancing *i past a separate value), 0 when argv[*i] is not
 * this flag, -1 when the value is missing (a usage error has been printed). */
int cli_flag_value(const char *cmd, int argc, char **argv, int *i, const char *flag,
                   const char **value);

/* The --dim overrides given so far (names are copies). */
typedef struct CliDims {
    OnnxDimOverride *items;
    uint32_t n, cap;
} CliDims;

/* Parses "NAME=VALUE" (VALUE a decimal integer >= 0) into dims. False, with a usage error
 * printed, when malformed or when NAME was given before. */
bool cli_dims_add(const char *cmd, CliDims *dims, const char *spec);
void cli_dims_free(CliDims *dims);

/* Loads path with shape inference and the --dim overrides; diagnostics (warnings too) go
 * to stderr prefixed with the path. NULL when the model cannot be used. */
IrGraph *cli_load_model(const char *path, const CliDims *dims);

/* The output folder of kiln compile, written atomically (cli/outdir.c): begin checks that
 * DIR may be replaced and names the hidden sibling the bundle is written into (tmp);
 * commit renames it into place (the old bundle, if any, goes only then); end removes what
 * is left of tmp (after an error) and frees. */
typedef struct CliOutDir {
    char *target; /* DIR without trailing slashes */
    char *tmp;    /* where the writer puts the bundle; NULL once committed */
    bool existed; /* DIR was there at begin (empty, or a Kiln bundle) */
} CliOutDir;

bool cli_outdir_begin(const char *dir, CliOutDir *o, Diag *d);
bool cli_outdir_commit(CliOutDir *o, Diag *d);
void cli_outdir_end(CliOutDir *o);

#endif
