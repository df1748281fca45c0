/* kiln validate: compiles a model to a C bundle in a scratch folder, builds it with the
 * system C compiler, runs it and ONNX Runtime (scripts/kiln_ort.py, carried inside the
 * binary) on the same inputs, one sample or many, and compares the outputs
 * (cli/validate_figures.c: errors, the failing elements, top-1/top-5 agreement, warnings
 * when a comparison proves little). With --per-node every intermediate value is compared
 * too, and the nodes are ranked by how much each grows the error. Open input dims without
 * a value get defaults that a warning names, large enough that no tensor is empty.
 * docs/validate.md describes the command. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/c/cgen.h"
#include "passes/debug_outputs.h"
#include "cli.h"
#include "driver/kiln.h"
#include "ir/open_dims.h"
#include "json.h"
#include "npy.h"
#include "progress.h"
#include "validate.h"

extern char **environ;
extern const char cli_validate_script[]; /* scripts/kiln_ort.py, gen/validate_script.c */

const char cli_validate_help[] =
    "usage: kiln validate MODEL [--target c] [--inputs PATH | --seed N] [--samples N]\n"
    "                     [--dist uniform|normal] [--rtol X] [--atol Y] [--per-node]\n"
    "                     [--json FILE] [--outputs DIR] [--dim NAME=VALUE]...\n"
    "                     [--shape INPUT=DIMS]... [--keep DIR] [--cc CC] [--quiet]\n"
    "       kiln validate MODEL --int8 FILE.qparams --per-layer [--inputs DIR]\n"
    "                     [--samples N] [--seed N] [--cc CC] [--keep DIR] [--quiet]\n"
    "\n"
    "Compiles MODEL to a C bundle, builds it with the system C compiler, runs it and ONNX\n"
    "Runtime on the same inputs (one sample or many) and compares every output: max abs\n"
    "error, max rel error, cosine similarity, top-1/top-5 agreement for class scores, the\n"
    "elements out of tolerance with the worst of them. An element passes when\n"
    "|kiln - ort| <= atol + rtol * |ort|. docs/validate.md has the details.\n"
    "\n"
    "options:\n"
    "  --target c            the backend to validate (only c for now)\n"
    "  --inputs PATH         the inputs: a folder with NAME.npy or .pb (ONNX TensorProto)\n"
    "                        or input_K.npy/.pb files; a folder of such folders (one\n"
    "                        sample each); or one .npz (an array per input) or .npy (one\n"
    "                        input) holding the samples along a first batch axis\n"
    "  --seed N              random inputs from seed N (default 0): floats uniform in\n"
    "                        [-1, 1) (or normal), integers in [0, 4), bools 50/50\n"
    "  --samples N           random inputs: N samples (default 1)\n"
    "  --dist uniform|normal the distribution of random float inputs (default uniform)\n"
    "  --rtol X, --atol Y    the tolerance (default rtol 1e-3, atol 1e-4)\n"
    "  --per-node            also compare every intermediate value; rank the nodes by how\n"
    "                        much each grows the error, name the first that diverges and\n"
    "                        the likely cause\n"
    "  --json FILE           write every figure as JSON to FILE (- for stdout)\n"
    "  --outputs DIR         write the bundle's outputs to DIR/NAME.npy (several samples:\n"
    "                        along a new first axis)\n"
    "  --dim NAME=VALUE      fix the symbolic dimension NAME to VALUE (repeatable)\n"
    "  --shape INPUT=DIMS    give input INPUT the shape DIMS, as in x=1x3x224x224\n"
    "                        (repeatable); open dims left without a value get defaults\n"
    "                        that a warning names\n"
    "  --keep DIR            work in DIR (created, with its parents) and keep it\n"
    "  --cc CC               the C compiler (default cc); built with -O2 -std=c99\n"
    "  --int8 FILE.qparams   with --per-layer, no ONNX Runtime: the int8 bundle against\n"
    "  --per-layer           the float one, each int8 layer's SQNR, cosine and worst\n"
    "                        error, worst first (--inputs: .npy/.npz samples; else\n"
    "                        --samples N uniform [0,1) ones; docs/int8.md)\n"
    "  --quiet               no progress line (shown only when stderr is a terminal)\n"
    "  -h, --help            print this help\n"
    "\n"

    "ONNX Runtime is run by $KILN_PYTHON, else ~/.cache/kiln/venv/bin/python, else python3.\n"
    "exit status: 0 every output within tolerance on every sample, 1 an output is not (or\n"
    "the model, the build or ONNX Runtime failed), 2 usage error (including unusable\n"
    "--inputs files, and --dim/--shape the model cannot take).\n";

#define VALIDATE_BUNDLE "model"      /* the bundle's name: symbols model_run, ... */
#define VALIDATE_RTOL 1e-3           /* the ONNX backend tests' rtol */
#define VALIDATE_ATOL 1e-4           /* looser than ONNX's 1e-7: whole models sum long chains */
#define VALIDATE_LOG_LINES 20        /* compiler output lines shown when a build fails */
#define VALIDATE_PY_EXIT_USAGE 2     /* kiln_ort.py's status for unusable inputs */
#define VALIDATE_MAX_SAMPLES 1000000 /* --samples and the samples a file may hold */
#define VALIDATE_DIM_START 32        /* open dims past axis 0 start here: the total stride of
                                        most CNNs, so their maps stay at least 1x1 */
#define VALIDATE_DIM_MAX 4096        /* ... and double until no tensor is empty, up to this */

/* ---- files and processes ----------------------------------------------------------- */

static char *path_join(const char *dir, const char *file) {
    size_t n = strlen(dir) + strlen(file) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, file);
    return p;
}

static char *fmt_alloc(const char *fmt, ...) CW_PRINTF(1, 2);
static char *fmt_alloc(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = malloc((size_t)n + 1);
    if (!s) return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

/* Removes the folder that mkdtemp made for us, and what we wrote in it (two levels). */
static void remove_tree(const char *path) {
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            char *p = path_join(path, e->d_name);
            struct stat st;
            if (p && lstat(p, &st) == 0) {
                if (S_ISDIR(st.st_mode)) remove_tree(p);
                else unlink(p);
            }
            free(p);
        }
        closedir(d);
    }
    rmdir(path);
}

static bool write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

/* The whole file, malloc'd (NUL-terminated), or NULL. */
static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *p = realloc(buf, cap * 2 + 1);
            if (!p) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = p;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) buf[n] = 0;
    if (len) *len = n;
    return buf;
}

static int run_process_raw(char *const argv[], const char *log) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (log) {
        posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
    }
    pid_t pid;
    int err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (err != 0) {
        errno = err;
        return -1;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* The progress line of the running validation (NULL: none): erased before an error. */
static CliProgress *validate_progress;

static void progress_pause(void) {
    if (validate_progress) cli_progress_end(validate_progress);
}

/* Runs argv (looked up in PATH) with stdout and stderr sent to log (NULL: inherited).
 * Returns the exit status, 128 + signal, or -1 (errno set) when it could not start; the
 * progress line is erased when it did not succeed, for the caller's error. */
static int run_process(char *const argv[], const char *log) {
    int st = run_process_raw(argv, log);
    if (st != 0) progress_pause();
    return st;
}

/* Prints up to max_lines of a log file, indented. */
static void show_log(const char *log, int max_lines) {
    char *text = read_all(log, NULL);
    if (!text) return;
    int lines = 0;
    for (char *p = text; *p && lines < max_lines; lines++) {
        char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        fprintf(stderr, "    %.*s\n", (int)len, p);
        p = nl ? nl + 1 : p + len;
    }
    free(text);
}

/* ---- options ---------------------------------------------------------------------------- */

static int parse_double(const char *flag, const char *s, double *out) {
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (!s[0] || *end || errno == ERANGE || !isfinite(v) || v < 0)
        return cli_usage_error("validate", "%s wants a number >= 0, got '%s'", flag, s);
    *out = v;
    return 0;
}

static int parse_count(const char *flag, const char *s, int64_t lo, int64_t *out) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (s[0] < '0' || s[0] > '9' || *end || errno == ERANGE || v < lo ||
        v > VALIDATE_MAX_SAMPLES * 1000LL)
        return cli_usage_error("validate", "%s wants an integer >= %lld, got '%s'", flag,
                               (long long)lo, s);
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, ValidateOpts *o, bool *help) {
    const char *target = "c", *seed = NULL, *rtol = NULL, *atol = NULL, *samples = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int m;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            *help = true;
            return 0;
        }
        if (strcmp(argv[i], "--per-node") == 0) {
            o->per_node = true;
        } else if (strcmp(argv[i], "--quiet") == 0) {
            o->quiet = true;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--target", &v)) != 0) {
            if (m < 0) return CLI_EXIT_USAGE;
            target = v;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--inputs", &v)) != 0) {
            if (m < 0) return CLI_EXIT_USAGE;
            o->inputs_path = v;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--seed", &v)) != 0) {
            if (m < 0) return CLI_EXIT_USAGE;
            seed = v;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--samples", &v)) != 0) {
            if (m < 0) return CLI_EXIT_USAGE;
            samples = v;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--dist", &v)) != 0) {
            if (m < 0) return CLI_EXIT_USAGE;
            o->dist = v;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--rtol", &v)) != 0) {
            if (m < 0) return CLI_EXIT_USAGE;
            rtol = v;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--atol", &v)) != 0) {
            if (m < 0) return CLI_EXIT_USAGE;
            atol = v;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--json", &v)) != 0) {
            if (m < 0) return CLI_EXIT_USAGE;
            o->json_path = v;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--outputs", &v)) != 0) {
            if (m < 0) return CLI_EXIT_USAGE;
            o->outputs_dir = v;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--keep", &v)) != 0) {
            if (m < 0) return CLI_EXIT_USAGE;
            o->keep_dir = v;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--cc", &v)) != 0) {
            if (m < 0) return CLI_EXIT_USAGE;
            o->cc = v;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--dim", &v)) != 0) {
            if (m < 0 || !cli_dims_add("validate", &o->dims, v)) return CLI_EXIT_USAGE;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--shape", &v)) != 0) {
            if (m < 0 || !cli_shape_add("validate", &o->dims, v)) return CLI_EXIT_USAGE;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("validate", "unknown option '%s'", argv[i]);
        } else if (!o->model) {
            o->model = argv[i];
        } else {
            return cli_usage_error("validate", "more than one model given ('%s')", argv[i]);
        }
    }
    if (!o->model) return cli_usage_error("validate", "no MODEL given");
    if (strcmp(target, "c") != 0)
        return cli_usage_error("validate", "unknown target '%s' (supported: c)", target);
    if (strcmp(o->dist, "uniform") != 0 && strcmp(o->dist, "normal") != 0)
        return cli_usage_error("validate", "--dist takes uniform or normal, not '%s'", o->dist);
    if (seed && o->inputs_path)
        return cli_usage_error("validate", "--seed and --inputs exclude each other");
    if (samples && o->inputs_path)
        return cli_usage_error("validate", "--samples is for random inputs; --inputs gives "
                                           "its own samples");
    if (seed && parse_count("--seed", seed, 0, &o->seed)) return CLI_EXIT_USAGE;
    if (samples && parse_count("--samples", samples, 1, &o->samples)) return CLI_EXIT_USAGE;
    if (o->samples > VALIDATE_MAX_SAMPLES)
        return cli_usage_error("validate", "--samples: at most %d", VALIDATE_MAX_SAMPLES);
    if (rtol && parse_double("--rtol", rtol, &o->rtol)) return CLI_EXIT_USAGE;
    if (atol && parse_double("--atol", atol, &o->atol)) return CLI_EXIT_USAGE;
    if (!o->cc[0] || strchr(o->cc, ' '))
        return cli_usage_error("validate", "--cc wants one program name, got '%s'", o->cc);
    struct stat sb;
    if (o->inputs_path) {
        size_t len = strlen(o->inputs_path);
        bool file = len > 4 && (strcmp(o->inputs_path + len - 4, ".npz") == 0 ||
                                strcmp(o->inputs_path + len - 4, ".npy") == 0);
        if (stat(o->inputs_path, &sb) != 0 || (file ? !S_ISREG(sb.st_mode) : !S_ISDIR(sb.st_mode)))
            return cli_usage_error("validate", "--inputs %s: not a folder, .npz or .npy file",
                                   o->inputs_path);
    }
    return 0;
}

/* ---- the model, the bundle, the runs ------------------------------------------------------ */

/* Records the nodes (graph order) before the bundle writer folds constants. */
static ValidateNode *record_nodes(const IrGraph *g, uint32_t *n_out) {
    ValidateNode *r = calloc(g->n_nodes + 1, sizeof *r);
    uint32_t n = 0;
    for (uint32_t i = 0; r && i < g->n_nodes; i++) {
        const IrNode *nd = &g->nodes[i];
        if (nd->dead || nd->op == IR_OP_CONSTANT) continue;
        ValidateNode *x = &r[n++];
        x->name = nd->name;
        x->op_type = nd->op_type;
        x->domain = nd->domain;
        x->opset = nd->opset;
        x->inputs = malloc((nd->n_inputs + 1) * sizeof *x->inputs);
        x->outputs = malloc((nd->n_outputs + 1) * sizeof *x->outputs);
        if (x->inputs && nd->n_inputs) memcpy(x->inputs, nd->inputs, nd->n_inputs * 4u);
        if (x->outputs && nd->n_outputs) memcpy(x->outputs, nd->outputs, nd->n_outputs * 4u);
        x->n_inputs = x->inputs ? nd->n_inputs : 0;
        x->n_outputs = x->outputs ? nd->n_outputs : 0;
    }
    *n_out = n;
    return r;
}

static void json_dims(CliJson *j, const IrType *t) {
    cli_json_array_begin(j, true);
    for (int i = 0; i < t->rank; i++) cli_json_int(j, t->dims[i]);
    cli_json_array_end(j);
}

static void write_manifest_value(CliJson *j, const IrGraph *g, uint32_t v, const char *file,
                                 bool extra, bool output) {
    cli_json_object_begin(j, true);
    cli_json_key(j, "name");
    cli_json_string(j, g->values[v].name);
    cli_json_key(j, "dtype");
    cli_json_int(j, g->values[v].type.dtype);
    cli_json_key(j, "dims");
    json_dims(j, &g->values[v].type);
    cli_json_key(j, "file");
    cli_json_string(j, file);
    if (output) {
        cli_json_key(j, "extra");
        cli_json_bool(j, extra);
    }
    cli_json_object_end(j);
}

/* manifest.json: what kiln_ort.py needs to make the inputs and the reference outputs. */
static bool write_manifest(const char *path, const char *work, const IrGraph *g,
                           uint32_t n_orig_outputs, const ValidateOpts *o) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    CliJson j;
    cli_json_init(&j, f);
    cli_json_object_begin(&j, false);
    cli_json_key(&j, "model");
    cli_json_string(&j, o->model);
    cli_json_key(&j, "work");
    cli_json_string(&j, work);
    cli_json_key(&j, "inputs_path");
    if (o->inputs_path) cli_json_string(&j, o->inputs_path);
    else cli_json_null(&j);
    cli_json_key(&j, "seed");
    cli_json_int(&j, o->seed);
    cli_json_key(&j, "samples");
    cli_json_int(&j, o->samples);
    cli_json_key(&j, "dist");
    cli_json_string(&j, o->dist);
    char file[32];
    cli_json_key(&j, "inputs");
    cli_json_array_begin(&j, false);
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        snprintf(file, sizeof file, "in_%u.bin", i);
        write_manifest_value(&j, g, g->inputs[i], file, false, false);
    }
    cli_json_array_end(&j);
    cli_json_key(&j, "outputs");
    cli_json_array_begin(&j, false);
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        snprintf(file, sizeof file, "ref_%u.bin", i);
        write_manifest_value(&j, g, g->outputs[i], file, i >= n_orig_outputs, true);
    }
    cli_json_array_end(&j);
    cli_json_object_end(&j);
    cli_json_finish(&j);
    return fclose(f) == 0;
}

static const char *find_python(void) {
    const char *env = getenv("KILN_PYTHON");
    if (env && env[0]) return env;
    static char venv[4096];
    const char *home = getenv("HOME");
    if (home && (size_t)snprintf(venv, sizeof venv, "%s/.cache/kiln/venv/bin/python", home) <
                    sizeof venv &&
        access(venv, X_OK) == 0)
        return venv;
    return "python3";
}

/* Runs kiln_ort.py; its one-line errors are passed on. Returns a CLI exit code. */
static int run_reference(const char *work, const char *manifest) {
    char *script = path_join(work, "kiln_ort.py"), *log = path_join(work, "python.log");
    const char *py = find_python();
    int rc = CLI_EXIT_MODEL;
    if (!script || !log || !write_text(script, cli_validate_script)) {
        progress_pause();
        fprintf(stderr, "kiln validate: error: cannot write %s\n", work);
        goto done;
    }
    char *argv[] = {(char *)py, script, (char *)manifest, NULL};
    int st = run_process(argv, log);
    if (st == 0) {
        rc = CLI_EXIT_OK;
    } else if (st < 0) {
        fprintf(stderr, "kiln validate: error: cannot run Python '%s': %s (install Python 3 "
                "with onnxruntime, numpy and onnx, e.g. by scripts/setup, or set KILN_PYTHON)\n",
                py, strerror(errno));
    } else {
        /* Pass on the script's own error lines; anything else (a crash) in one line. */
        char *text = read_all(log, NULL);
        bool said = false;
        for (char *p = text; p && *p;) {
            char *nl = strchr(p, '\n');
            size_t len = nl ? (size_t)(nl - p) : strlen(p);
            if (strncmp(p, "kiln validate:", 14) == 0) {
                fprintf(stderr, "%.*s\n", (int)len, p);
                said = true;
            }
            p = nl ? nl + 1 : p + len;
        }
        if (!said)
            fprintf(stderr, "kiln validate: error: the ONNX Runtime run with '%s' failed "
                    "(status %d; its output is in %s with --keep)\n", py, st, log);
        free(text);
        if (st == VALIDATE_PY_EXIT_USAGE) rc = CLI_EXIT_USAGE;
    }
done:
    free(script);
    free(log);
    return rc;
}

/* Builds the bundle's test program with the chosen compiler. */
static bool build_bundle(const char *bundle, const char *work, const char *cc, char **exe) {
    char *src = fmt_alloc("%s/%s.c", bundle, VALIDATE_BUNDLE);
    char *main_src = fmt_alloc("%s/%s_test_main.c", bundle, VALIDATE_BUNDLE);
    char *log = path_join(work, "cc.log");
    *exe = fmt_alloc("%s/%s_test", bundle, VALIDATE_BUNDLE);
    bool ok = false;
    if (src && main_src && log && *exe) {
        char *argv[] = {(char *)cc, "-O2", "-std=c99", "-o", *exe, src, main_src, "-lm", NULL};
        int st = run_process(argv, log);
        if (st < 0) {
            fprintf(stderr, "kiln validate: error: cannot run the C compiler '%s': %s (choose "
                    "one with --cc)\n", cc, strerror(errno));
        } else if (st != 0) {
            fprintf(stderr, "kiln validate: error: '%s' could not build the bundle:\n", cc);
            show_log(log, VALIDATE_LOG_LINES);
        } else {
            ok = true;
        }
    }
    free(src);
    free(main_src);
    free(log);
    return ok;
}

static const char *status_meaning(int st) {
    switch (st) {
    case 3: return "an index in the input data is out of range";
    case 4: return "the input data asks for a shape the model was not compiled for";
    case 5: return "the input data breaks another contract of an op";
    default: return "see the bundle's header";
    }
}

/* Where sample k of n keeps its files (as kiln_ort.py): the work folder for one sample,
 * work/sample_K for several. malloc'd. */
static char *sample_dir(const char *work, int64_t k, int64_t n) {
    return n == 1 ? fmt_alloc("%s", work) : fmt_alloc("%s/sample_%lld", work, (long long)k);
}

/* Runs the test program on sample k: weights, inputs, outputs as files in its folder. */
static bool run_bundle(const char *exe, const char *bundle, const char *dir, const IrGraph *g,
                       int64_t k, int64_t n_samples) {
    uint32_t n = 2 + g->n_inputs + g->n_outputs;
    char **argv = calloc(n + 1, sizeof *argv);
    bool ok = argv != NULL;
    uint32_t a = 0;
    if (ok) {
        argv[a++] = (char *)exe;
        argv[a++] = fmt_alloc("%s/%s_weights.bin", bundle, VALIDATE_BUNDLE);
        for (uint32_t i = 0; i < g->n_inputs; i++) argv[a++] = fmt_alloc("%s/in_%u.bin", dir, i);
        for (uint32_t i = 0; i < g->n_outputs; i++)
            argv[a++] = fmt_alloc("%s/out_%u.bin", dir, i);
        for (uint32_t i = 1; i < a; i++) ok &= argv[i] != NULL;
    }
    char *log = path_join(dir, "run.log");
    if (ok && log) {
        int st = run_process(argv, log);
        char *text = read_all(log, NULL);
        if (text) text[strcspn(text, "\n")] = 0;
        if (st != 0) {
            const char *status = text ? strstr(text, "status ") : NULL;
            int code = status ? atoi(status + 7) : 0;
            char on[48] = "";
            if (n_samples > 1) snprintf(on, sizeof on, " on sample %lld", (long long)k);
            if (st == 1 && code > 0)
                fprintf(stderr, "kiln validate: error: the compiled model failed%s: status %d "
                        "(%s)\n", on, code, status_meaning(code));
            else
                fprintf(stderr, "kiln validate: error: the compiled model's test program "
                        "failed%s (exit %d%s%s)\n", on, st, text && text[0] ? ": " : "",
                        text ? text : "");
            ok = false;
        }
        free(text);
    } else {
        ok = false;
    }
    for (uint32_t i = 1; argv && i < a; i++) free(argv[i]);
    free(argv);
    free(log);
    return ok;
}

static bool comparable_dtype(IrDType t) {
    return t == IR_DTYPE_F32 || t == IR_DTYPE_F64 || t == IR_DTYPE_F16 || t == IR_DTYPE_BF16 ||
           t == IR_DTYPE_I8 || t == IR_DTYPE_U8 || t == IR_DTYPE_BOOL || t == IR_DTYPE_I16 ||
           t == IR_DTYPE_U16 || t == IR_DTYPE_I32 || t == IR_DTYPE_U32 || t == IR_DTYPE_I64 ||
           t == IR_DTYPE_U64;
}

/* Reads kiln's and ORT's files of compared value k for sample s and adds them to f. */
static void compare_files(const char *work, const char *dir, const IrGraph *g, uint32_t k,
                          int64_t s, const ValidateOpts *o, bool scores, ValidateFigures *f) {
    if (f->error[0]) return; /* nothing to compare on the first sample: nor on the rest */
    const IrType *type = &g->values[g->outputs[k]].type;
    char *out = fmt_alloc("%s/out_%u.bin", dir, k), *ref = fmt_alloc("%s/ref_%u.bin", dir, k);
    char *err = fmt_alloc("%s/ref_%u.bin.err", work, k);
    size_t la = 0, lb = 0;
    char *a = NULL, *b = NULL, *msg = NULL;
    size_t want = ir_dtype_size_bytes((IrDType)type->dtype, ir_type_numel(type));
    if (!out || !ref || !err) {
        snprintf(f->error, sizeof f->error, "out of memory");
    } else if ((msg = read_all(err, NULL)) != NULL) {
        msg[strcspn(msg, "\n")] = 0;
        snprintf(f->error, sizeof f->error, "%s", msg);
    } else if (!comparable_dtype((IrDType)type->dtype)) {
        snprintf(f->error, sizeof f->error, "validate cannot compare %s data",
                 ir_dtype_name((IrDType)type->dtype));
    } else if (!(a = read_all(out, &la)) || la != want) {
        snprintf(f->error, sizeof f->error, "the bundle's output file is missing or short");
    } else if (!(b = read_all(ref, &lb)) || lb != want) {
        snprintf(f->error, sizeof f->error, "ONNX Runtime's output file is missing or short");
    } else {
        validate_compare(type, (unsigned char *)a, (unsigned char *)b, s, o, scores, f);
    }
    free(msg);
    free(a);
    free(b);
    free(out);
    free(ref);
    free(err);
}

/* The samples kiln_ort.py wrote (samples.txt: the count, then a label a line), or -1. */
static int64_t read_samples(const char *work) {
    char *path = path_join(work, "samples.txt");
    char *text = path ? read_all(path, NULL) : NULL;
    long long n = text ? atoll(text) : -1;
    free(text);
    free(path);
    return n >= 1 && n <= VALIDATE_MAX_SAMPLES ? n : -1;
}

/* --outputs DIR: each graph output of the model as DIR/NAME.npy, the samples along a new
 * first axis when there are several. */
static bool write_outputs(const ValidateOpts *o, const char *work, const IrGraph *g,
                          uint32_t n_orig, int64_t n_samples) {
    bool ok = true;
    if (!cli_mkdir_parents(o->outputs_dir) ||
        (mkdir(o->outputs_dir, 0777) != 0 && errno != EEXIST)) {
        fprintf(stderr, "kiln validate: error: cannot create %s\n", o->outputs_dir);
        return false;
    }
    for (uint32_t i = 0; i < n_orig && ok; i++) {
        const IrValue *val = &g->values[g->outputs[i]];
        IrDType t = (IrDType)val->type.dtype;
        if (!cli_npy_descr(t)) {
            fprintf(stderr, "kiln validate: warning: output '%s' is %s, which .npy cannot "
                    "hold: not written\n", val->name, ir_dtype_name(t));
            continue;
        }
        int64_t dims[IR_MAX_RANK + 1];
        int rank = 0;
        if (n_samples > 1) dims[rank++] = n_samples;
        for (int d = 0; d < val->type.rank; d++) dims[rank++] = val->type.dims[d];
        /* the file name: the output's name with characters a path cannot hold made _ */
        char *name = fmt_alloc("%s", val->name);
        for (char *c = name; c && *c; c++)
            if (*c == '/' || *c == '\\' || (unsigned char)*c < 0x20) *c = '_';
        char *path = name ? fmt_alloc("%s/%s.npy", o->outputs_dir,
                                      name[0] && strcmp(name, ".") && strcmp(name, "..")
                                          ? name : "output") : NULL;
        FILE *f = path ? fopen(path, "wb") : NULL;
        ok = f && cli_npy_header(f, t, rank, dims);
        size_t bytes = ir_dtype_size_bytes(t, ir_type_numel(&val->type));
        for (int64_t s = 0; ok && s < n_samples; s++) {
            char *dir = sample_dir(work, s, n_samples);
            char *file = dir ? fmt_alloc("%s/out_%u.bin", dir, i) : NULL;
            size_t len = 0;
            char *data = file ? read_all(file, &len) : NULL;
            ok = data && len == bytes && fwrite(data, 1, bytes, f) == bytes;
            free(data);
            free(file);
            free(dir);
        }
        if (f && fclose(f) != 0) ok = false;
        if (!ok) fprintf(stderr, "kiln validate: error: cannot write %s\n", path ? path : "");
        free(path);
        free(name);
    }
    return ok;
}

/* ---- open dims --------------------------------------------------------------------------- */

/* Node outputs with a zero dim: tensors that are empty. */
static uint32_t count_empty(const IrGraph *g) {
    uint32_t n = 0;
    for (uint32_t v = 0; v < g->n_values; v++) {
        const IrType *t = &g->values[v].type;
        if (g->values[v].kind != IR_VALUE_NODE || t->kind != IR_TYPE_TENSOR) continue;
        for (int d = 0; d < t->rank; d++)
            if (t->dims[d] == 0) {
                n++;
                break;
            }
    }
    return n;
}

/* Loads the model with o->dims plus extra (quiet); the graph, or NULL. */
static IrGraph *load_quiet(const ValidateOpts *o, const CliDims *extra) {
    CliDims all = o->dims;
    OnnxDimOverride *items = calloc(o->dims.n + extra->n + 1, sizeof *items);
    if (!items) return NULL;
    if (o->dims.n) memcpy(items, o->dims.items, o->dims.n * sizeof *items);
    if (extra->n) memcpy(items + o->dims.n, extra->items, extra->n * sizeof *items);
    all.items = items;
    all.n = o->dims.n + extra->n;
    Diag d;
    diag_init(&d);
    OnnxLoadOptions lo = cli_load_options(&all, NULL);
    IrGraph *g = onnx_load_file(o->model, &lo, &d);
    if (g && diag_has_errors(&d)) {
        ir_graph_free(g);
        g = NULL;
    }
    diag_free(&d);
    free(items);
    return g;
}

/* Open dims of the inputs that nothing fixed get defaults, named by a warning: 1 for a
 * batch (a dim only ever at axis 0), and for the rest the smallest power of two from
 * VALIDATE_DIM_START up for which no tensor of the model is empty (a 1x1 image under a
 * stride-2 MaxPool leaves an empty map; an image must be as large as the model's strides
 * and pools need). Nothing when the model cannot load (the loud load that follows says
 * why). */
static void choose_defaults(ValidateOpts *o) {
    CliDims none = {0};
    IrGraph *g = load_quiet(o, &none);
    if (!g) return;
    IrOpenDim *v;
    uint32_t n = ir_open_dims(g, &v);
    if (n == 0) {
        ir_graph_free(g);
        return;
    }
    /* one entry per symbol: a batch when every appearance is at axis 0 */
    const char **names = calloc(n, sizeof *names);
    bool *batch = calloc(n, sizeof *batch);
    uint32_t n_names = 0;
    for (uint32_t i = 0; names && batch && i < n; i++) {
        const char *name = ir_graph_sym_name(g, v[i].sym);
        uint32_t k = 0;
        while (k < n_names && strcmp(names[k], name) != 0) k++;
        if (k == n_names) {
            names[n_names] = name;
            batch[n_names++] = true;
        }
        batch[k] &= v[i].axis == 0;
    }
    /* the rest: the smallest power of two that leaves no tensor empty */
    int64_t chosen = VALIDATE_DIM_START, best = -1;
    uint32_t best_empty = UINT32_MAX;
    bool any_spatial = false;
    for (uint32_t k = 0; k < n_names; k++) any_spatial |= !batch[k];
    for (int64_t size = VALIDATE_DIM_START; any_spatial && size <= VALIDATE_DIM_MAX; size *= 2) {
        CliDims extra = {0};
        char *spec;
        bool ok = true;
        for (uint32_t k = 0; k < n_names && ok; k++) {
            spec = fmt_alloc("%s=%lld", names[k], batch[k] ? 1LL : (long long)size);
            ok = spec && cli_dims_add("validate", &extra, spec);
            free(spec);
        }
        IrGraph *h = ok ? load_quiet(o, &extra) : NULL;
        uint32_t empty = h ? count_empty(h) : UINT32_MAX;
        if (h && empty < best_empty) {
            best_empty = empty;
            best = size;
        }
        if (h) ir_graph_free(h);
        cli_dims_free(&extra);
        if (empty == 0) break;
    }
    if (best > 0) chosen = best;
    fprintf(stderr, "kiln validate: warning: %u open dim%s of the inputs set to defaults "
            "(choose with --dim or --shape):", n_names, n_names == 1 ? "" : "s");
    for (uint32_t k = 0; k < n_names; k++) {
        long long value = batch[k] ? 1 : (long long)chosen;
        char *spec = fmt_alloc("%s=%lld", names[k], value);
        if (spec && cli_dims_add("validate", &o->dims, spec))
            fprintf(stderr, "%s %s", k ? "," : "", spec);
        free(spec);
    }
    if (any_spatial)
        fprintf(stderr, " (1 for a batch; %lld: the smallest power of two from %d %s)",
                (long long)chosen, VALIDATE_DIM_START,
                best_empty == 0 ? "that leaves no tensor of the model empty"
                                : "that leaves the fewest tensors empty");
    fprintf(stderr, "\n");
    free(names);
    free(batch);
    free(v);
    ir_graph_free(g);
}

/* ---- the command ------------------------------------------------------------------------- */

/* Everything after the arguments: returns the exit code. */
static int validate(ValidateOpts *o, const char *work) {
    int rc = CLI_EXIT_MODEL;
    CliProgress progress;
    cli_progress_init(&progress, "validate", o->quiet);
    validate_progress = &progress;
    ValidateNode *nodes = NULL;
    uint32_t n_nodes = 0;
    ValidateFigures *fig = NULL;
    char *bundle = path_join(work, "bundle"), *manifest = path_join(work, "manifest.json");
    char *exe = NULL, *ort = NULL, *ort_path = path_join(work, "ort.txt");
    IrGraph *g = NULL;
    choose_defaults(o); /* when the model cannot load, the load below says why */
    g = cli_load_model("validate", o->model, &o->dims, &rc);
    if (!g || !bundle || !manifest || !ort_path) goto done;
    rc = CLI_EXIT_MODEL;
    uint32_t n_orig = g->n_outputs;
    if (o->per_node) {
        pass_expose_intermediates(g);
        nodes = record_nodes(g, &n_nodes);
        if (!nodes) goto done;
    }
    BundleOptions copts = {.name = VALIDATE_BUNDLE, .test_main = true, .model_path = o->model};
    Diag d;
    diag_init(&d);
    cli_progress_show(&progress, "compiling the model");
    bool ok = kiln_compile_graph(g, "c", &copts, bundle, &d);
    cli_progress_end(&progress);
    diag_print(&d, stderr, o->model);
    diag_free(&d);
    if (!ok) goto done;
    if (!write_manifest(manifest, work, g, n_orig, o)) {
        fprintf(stderr, "kiln validate: error: cannot write %s\n", manifest);
        goto done;
    }
    cli_progress_show(&progress, "building the bundle with %s", o->cc);
    bool built = build_bundle(bundle, work, o->cc, &exe);
    cli_progress_end(&progress);
    if (!built) goto done;
    cli_progress_show(&progress, "ONNX Runtime on the inputs");
    rc = run_reference(work, manifest);
    cli_progress_end(&progress);
    if (rc != CLI_EXIT_OK) goto done;
    rc = CLI_EXIT_MODEL;
    int64_t n_samples = read_samples(work);
    if (n_samples < 1) {
        fprintf(stderr, "kiln validate: error: the ONNX Runtime run wrote no samples.txt\n");
        goto done;
    }
    fig = calloc(g->n_outputs + 1, sizeof *fig);
    if (!fig) goto done;
    for (uint32_t i = 0; i < g->n_outputs; i++) validate_figures_init(&fig[i]);
    for (int64_t s = 0; s < n_samples; s++) {
        char *dir = sample_dir(work, s, n_samples);
        cli_progress_show(&progress, "the bundle on sample %lld of %lld", (long long)s + 1,
                          (long long)n_samples);
        bool ran = dir && run_bundle(exe, bundle, dir, g, s, n_samples);
        if (!ran) cli_progress_end(&progress);
        for (uint32_t i = 0; ran && i < g->n_outputs; i++)
            compare_files(work, dir, g, i, s, o, i < n_orig, &fig[i]);
        free(dir);
        if (!ran) goto done;
    }
    cli_progress_end(&progress);
    if (o->outputs_dir && !write_outputs(o, work, g, n_orig, n_samples)) goto done;

    ort = read_all(ort_path, NULL);
    if (ort) ort[strcspn(ort, "\n")] = 0;
    ValidateRun run = {o, g, ort ? ort : "onnxruntime", g->n_outputs, n_orig, g->outputs, fig,
                       nodes, n_nodes, n_samples, -1, -1};
    if (o->per_node) validate_rank_nodes(&run);
    /* With --json - stdout carries the JSON alone; the report goes to stderr. */
    FILE *out = o->json_path && strcmp(o->json_path, "-") == 0 ? stderr : stdout;
    fprintf(out, "kiln validate: %s, kiln C bundle against %s\n", o->model, run.reference);
    if (o->inputs_path)
        fprintf(out, "inputs: from %s (%lld sample%s)\n", o->inputs_path, (long long)n_samples,
                n_samples == 1 ? "" : "s");
    else if (n_samples > 1)
        fprintf(out, "inputs: random, seed %lld, %lld samples: floats %s, integers in [0, 4), "
                "bools 50/50\n", (long long)o->seed, (long long)n_samples,
                strcmp(o->dist, "normal") == 0 ? "normal (0, 1)" : "uniform in [-1, 1)");
    else
        fprintf(out, "inputs: random, seed %lld: floats %s, integers in [0, 4), bools 50/50\n",
                (long long)o->seed,
                strcmp(o->dist, "normal") == 0 ? "normal (0, 1)" : "uniform in [-1, 1)");
    fprintf(out, "tolerance: |kiln - ort| <= %g + %g * |ort|\n", o->atol, o->rtol);
    uint32_t failed = validate_report(out, &run);
    if (failed) fprintf(out, "\nFAIL: %u of %u outputs out of tolerance\n", failed, n_orig);
    else fprintf(out, "\nPASS: %u of %u outputs within tolerance\n", n_orig, n_orig);
    rc = failed ? CLI_EXIT_MODEL : CLI_EXIT_OK;
    if (o->json_path && !validate_write_json(&run, failed == 0)) rc = CLI_EXIT_MODEL;
done:
    for (uint32_t i = 0; nodes && i < n_nodes; i++) {
        free(nodes[i].inputs);
        free(nodes[i].outputs);
    }
    free(nodes);
    free(fig);
    free(exe);
    free(ort);
    free(ort_path);
    free(bundle);
    free(manifest);
    if (g) ir_graph_free(g);
    cli_progress_end(&progress);
    validate_progress = NULL;
    return rc;
}

int cli_validate_run(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--int8") == 0 || strncmp(argv[i], "--int8=", 7) == 0)
            return cli_validate_int8_run(argc, argv);
    ValidateOpts o = {0};
    o.rtol = VALIDATE_RTOL;
    o.atol = VALIDATE_ATOL;
    o.cc = "cc";
    o.dist = "uniform";
    o.samples = 1;
    bool help = false;
    int rc = parse_args(argc, argv, &o, &help);
    if (help) fputs(cli_validate_help, stdout);
    if (help || rc != 0) {
        cli_dims_free(&o.dims);
        return help ? CLI_EXIT_OK : rc;
    }
    char *work = NULL;
    if (o.keep_dir) {
        if (!cli_mkdir_parents(o.keep_dir) || (mkdir(o.keep_dir, 0777) != 0 && errno != EEXIST)) {
            fprintf(stderr, "kiln validate: error: cannot create %s: %s\n", o.keep_dir,
                    strerror(errno));
            cli_dims_free(&o.dims);
            return CLI_EXIT_USAGE;
        }
        work = realpath(o.keep_dir, NULL);
    } else {
        const char *tmp = getenv("TMPDIR");
        work = fmt_alloc("%s/kiln-validate-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
        if (work && !mkdtemp(work)) {
            free(work);
            work = NULL;
        }
    }
    if (!work) {
        fprintf(stderr, "kiln validate: error: cannot make a work folder: %s\n",
                strerror(errno));
        cli_dims_free(&o.dims);
        return CLI_EXIT_MODEL;
    }
    rc = validate(&o, work);
    if (o.keep_dir) fprintf(stderr, "kiln validate: work kept in %s\n", work);
    else remove_tree(work);
    free(work);
    cli_dims_free(&o.dims);
    return rc;
}
