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
    const char *help;    /* the full text for `kiln help NAME` and `kiln NAME --help`, */
    const char *help2;   /* continued here, or NULL (C99 guarantees string literals only up
                          * to 4095 characters) */
} CliCommand;

/* The subcommands (one file each: cli/inspect.c, cli/compile.c, cli/validate.c). */
int cli_inspect_run(int argc, char **argv);
extern const char cli_inspect_help[];
int cli_compile_run(int argc, char **argv);
extern const char cli_compile_help[], cli_compile_help2[];
int cli_validate_run(int argc, char **argv);
/* kiln validate MODEL --int8 FILE.qparams --per-layer (cli/validate_int8.c): cli_validate_run
 * hands a command line with --int8 over to it. */
int cli_validate_int8_run(int argc, char **argv);
extern const char cli_validate_help[];
int cli_calibrate_run(int argc, char **argv);
/* The samples of kiln calibrate and kiln validate --per-layer (cli/samples.c): PATH, a folder
 * of .npy/.npz files (name order) or one file; a .npy holds one sample of the input's shape
 * or N along a first axis; a .npz (numpy.savez) holds each input under its name (or, for a
 * model of one input, as its only member), the same ways; a model of several inputs takes
 * .npz files. Elements are of the input's type. Headers are checked on opening, with one
 * error naming the file and the input ("kiln CMD: error: ..."); samples are read one at a
 * time. */
typedef struct CliSample {
    const char *path;      /* the file (owned by the set) */
    int64_t offset;        /* of its first sample's values */
    int64_t index, count;  /* this sample of the file's count */
} CliSample;
typedef struct CliSampleSet {
    CliSample *v;
    int64_t n, cap;
    char **files;
    int64_t n_files;
} CliSampleSet;
/* The samples of input `in`; sole: it is the model's only input (a .npy, or a .npz's only
 * member, is then taken for it). */
bool cli_samples_open(const char *cmd, const char *path, const IrValue *in, bool sole,
                      CliSampleSet *set);
/* Sample k of input `in` into data (its element type and count); false after an error
 * naming it (a short file; NaN or infinity in a float32 input). */
bool cli_sample_read(const char *cmd, const CliSampleSet *set, int64_t k, const IrValue *in,
                     void *data);
void cli_samples_free(CliSampleSet *set);

/* Every input of a model fed from one PATH: a set per input, all of the same count. Sample k
 * of input i is read into buf[i] and written to WORK/in_I.bin (cli_feed_arg), the files a
 * bundle's test main takes. Without sets, cli_feed_write writes buf as it is. */
typedef struct CliFeed {
    uint32_t n;            /* the model's inputs */
    IrValue *in;           /* copies of the graph's input values */
    CliSampleSet *sets;    /* one per input */
    int64_t n_samples;
    void **buf;            /* one sample of each input */
} CliFeed;
/* Checks that every input of g has a static shape and a numpy element type, then opens PATH
 * for each (PATH NULL: no sets; the caller fills buf); false after an error naming the
 * model, the file or the input. */
bool cli_feed_open(const char *cmd, const char *path, const IrGraph *g, const char *model,
                   CliFeed *f);
bool cli_feed_write(const char *cmd, CliFeed *f, int64_t k, const char *work);
char *cli_feed_arg(const char *work, uint32_t i); /* WORK/in_I.bin (malloc'd) */
void cli_feed_free(CliFeed *f);
extern const char cli_calibrate_help[];

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

/* The --dim and --shape overrides given so far (names are copies). */
typedef struct CliDims {
    OnnxDimOverride *items;
    uint32_t n, cap;
    OnnxShapeOverride *shapes;
    uint32_t n_shapes, cap_shapes;
} CliDims;

/* Parses "NAME=VALUE" (VALUE a decimal integer >= 0) into dims. False, with a usage error
 * printed, when malformed or when NAME was given before. */
bool cli_dims_add(const char *cmd, CliDims *dims, const char *spec);
/* Parses --shape's "INPUT=1x3x48x192" (also trtexec's "INPUT:1x3x48x192", and several
 * inputs as a comma list "a=1x3,b=1x7") into dims. False, with a usage error printed, when
 * malformed or when an input was given before. */
bool cli_shape_add(const char *cmd, CliDims *dims, const char *spec);
void cli_dims_free(CliDims *dims);

/* The command line argv[0..argc) of subcommand cmd as a user would type it again, for a
 * bundle's README: "kiln CMD ARGS", model given by its file name, the output folder left
 * out (-o/--output and its value: a bundle is the same wherever it is written), arguments
 * with shell characters single-quoted. malloc'd. */
char *cli_command_line(const char *cmd, int argc, char **argv, const char *model);

/* Loads path with shape inference and the --dim/--shape overrides; diagnostics (warnings
 * too) go to stderr prefixed with the path. NULL when the model cannot be used; *rc then
 * says why: CLI_EXIT_USAGE when an override does not fit the model (an input or symbol it
 * lacks, a rank or fixed dim that differs: with a hint for cmd), else CLI_EXIT_MODEL. */
IrGraph *cli_load_model(const char *cmd, const char *path, const CliDims *dims, int *rc);

/* The load options of dims: its --dim and --shape overrides, shape inference on. */
OnnxLoadOptions cli_load_options(const CliDims *dims, uint32_t *n_override_errors);

/* Creates the parent folders of path (not path itself), as mkdir -p does; false, with an
 * error on stderr, when one cannot be made. */
bool cli_mkdir_parents(const char *path);

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

/* cli/work.c: a, b and c joined, malloc'd (NULL when out of memory); argv run as a child
 * process with stdout and stderr in the file log: its exit status, 128 when it did not exit,
 * -1 when it could not start; dir and everything under it removed. */
char *cli_cat3(const char *a, const char *b, const char *c);
int cli_run_logged(char *const argv[], const char *log);
void cli_remove_work(const char *dir);

#endif
