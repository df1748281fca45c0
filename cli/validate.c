/* kiln validate: compiles a model to a C bundle in a scratch folder, builds it with the
 * system C compiler, runs it and ONNX Runtime (scripts/kiln_ort.py, carried inside the
 * binary) on the same inputs, and compares the outputs: max abs/rel error, cosine
 * similarity, top-1/top-5 agreement for class scores, pass/fail against atol + rtol*|ort|.
 * With --per-node every intermediate value is compared too, and the first node that
 * diverges is named. docs/validate.md describes the command. */
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

#include "backend/cgen.h"
#include "backend/debug_outputs.h"
#include "cli.h"
#include "json.h"
#include "runtime/rt_common.h"

extern char **environ;
extern const char cli_validate_script[]; /* scripts/kiln_ort.py, gen/validate_script.c */

const char cli_validate_help[] =
    "usage: kiln validate MODEL [--target c] [--inputs DIR | --seed N] [--dist uniform|normal]\n"
    "                     [--rtol X] [--atol Y] [--per-node] [--json FILE]\n"
    "                     [--dim NAME=VALUE]... [--keep DIR] [--cc CC]\n"
    "\n"
    "Compiles MODEL to a C bundle, builds it with the system C compiler, runs it and ONNX\n"
    "Runtime on the same inputs and compares every output: max abs error, max rel error,\n"
    "cosine similarity, top-1/top-5 agreement for class scores. An element passes when\n"
    "|kiln - ort| <= atol + rtol * |ort|. docs/validate.md has the details.\n"
    "\n"
    "options:\n"
    "  --target c            the backend to validate (only c for now)\n"
    "  --inputs DIR          the inputs: DIR/NAME.npy or .pb (ONNX TensorProto), or\n"
    "                        DIR/input_K.pb / input_K.npy for the K-th input\n"
    "  --seed N              random inputs from seed N (default 0): floats uniform in\n"
    "                        [-1, 1) (or normal), integers in [0, 4), bools 50/50\n"
    "  --dist uniform|normal the distribution of random float inputs (default uniform)\n"
    "  --rtol X, --atol Y    the tolerance (default rtol 1e-3, atol 1e-4)\n"
    "  --per-node            also compare every intermediate value; name the first node\n"
    "                        whose output diverges, with its inputs' errors\n"
    "  --json FILE           write every figure as JSON to FILE (- for stdout)\n"
    "  --dim NAME=VALUE      fix the symbolic dimension NAME to VALUE (repeatable)\n"
    "  --keep DIR            work in DIR and keep it (bundle, inputs, outputs)\n"
    "  --cc CC               the C compiler (default cc); built with -O2 -std=c99\n"
    "  -h, --help            print this help\n"
    "\n"
    "ONNX Runtime is run by $KILN_PYTHON, else ~/.cache/kiln/venv/bin/python, else python3.\n"
    "exit status: 0 every output within tolerance, 1 an output is not (or the model, the\n"
    "build or ONNX Runtime failed), 2 usage error (including unusable --inputs files).\n";

#define VALIDATE_BUNDLE "model"      /* the bundle's name: symbols model_run, ... */
#define VALIDATE_RTOL 1e-3           /* the ONNX backend tests' rtol */
#define VALIDATE_ATOL 1e-4           /* looser than ONNX's 1e-7: whole models sum long chains */
#define VALIDATE_TOP_K 5             /* the second agreement figure: top-5 class sets */
#define VALIDATE_LOG_LINES 20        /* compiler output lines shown when a build fails */
#define VALIDATE_PY_EXIT_USAGE 2     /* kiln_ort.py's status for unusable inputs */
#define VALIDATE_MSG_MAX 400         /* a reason for not comparing a value (one line) */

typedef struct ValidateOpts {
    const char *model, *inputs_dir, *json_path, *keep_dir, *cc, *dist;
    int64_t seed;
    double rtol, atol;
    bool per_node;
    CliDims dims;
} ValidateOpts;

/* The comparison of one value: kiln's bundle against ONNX Runtime. */
typedef struct Stats {
    char error[VALIDATE_MSG_MAX]; /* set when there is nothing to compare: why */
    int64_t n, n_bad;     /* elements; elements outside the tolerance */
    double max_abs, max_rel, cosine;
    int64_t worst;        /* index of the largest |kiln - ort| */
    double worst_kiln, worst_ort;
    bool classifier;      /* looks like class scores: top-k figures below */
    int64_t rows, top1, topk;
    bool has_topk;        /* more than VALIDATE_TOP_K classes */
    bool pass;
} Stats;

/* One compared value: a graph output of the (possibly widened) bundle. */
typedef struct Compared {
    uint32_t value;
    Stats st;
} Compared;

/* A node as it was before the bundle writer folded and compacted the graph. */
typedef struct NodeRec {
    const char *name, *op_type, *domain;
    int32_t opset;
    uint32_t *inputs, n_inputs;
    uint32_t *outputs, n_outputs;
} NodeRec;

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

/* Runs argv (looked up in PATH) with stdout and stderr sent to log (NULL: inherited).
 * Returns the exit status, 128 + signal, or -1 (errno set) when it could not start. */
static int run_process(char *const argv[], const char *log) {
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

/* ---- values and their data ---------------------------------------------------------- */

static void type_text(char *buf, size_t cap, const IrType *t) {
    size_t k = (size_t)snprintf(buf, cap, "%s[", ir_dtype_name((IrDType)t->dtype));
    for (int i = 0; i < t->rank && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

static bool is_float_dtype(IrDType t) {
    return t == IR_DTYPE_F32 || t == IR_DTYPE_F64 || t == IR_DTYPE_F16 || t == IR_DTYPE_BF16;
}

/* Element i of raw little-endian data of type t, as a double. */
static double element(const unsigned char *p, IrDType t, int64_t i) {
    switch (t) {
    case IR_DTYPE_F32: { float v; memcpy(&v, p + 4 * i, 4); return v; }
    case IR_DTYPE_F64: { double v; memcpy(&v, p + 8 * i, 8); return v; }
    case IR_DTYPE_F16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return rt_f16_to_f32(v); }
    case IR_DTYPE_BF16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return rt_bf16_to_f32(v); }
    case IR_DTYPE_I8: return (int8_t)p[i];
    case IR_DTYPE_U8: return p[i];
    case IR_DTYPE_BOOL: return p[i] != 0;
    case IR_DTYPE_I16: { int16_t v; memcpy(&v, p + 2 * i, 2); return v; }
    case IR_DTYPE_U16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return v; }
    case IR_DTYPE_I32: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    case IR_DTYPE_U32: { uint32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    case IR_DTYPE_I64: { int64_t v; memcpy(&v, p + 8 * i, 8); return (double)v; }
    case IR_DTYPE_U64: { uint64_t v; memcpy(&v, p + 8 * i, 8); return (double)v; }
    default: return NAN;
    }
}

static bool comparable_dtype(IrDType t) {
    return is_float_dtype(t) || t == IR_DTYPE_I8 || t == IR_DTYPE_U8 || t == IR_DTYPE_BOOL ||
           t == IR_DTYPE_I16 || t == IR_DTYPE_U16 || t == IR_DTYPE_I32 || t == IR_DTYPE_U32 ||
           t == IR_DTYPE_I64 || t == IR_DTYPE_U64;
}

/* Class scores: a float tensor of rank >= 2 whose dims after the first are all 1 but one,
 * and that one is >= 2: [N, C], [N, C, 1, 1], [N, 1, C]. Rows are the first dim. */
static bool classifier_shape(const IrType *t, int64_t *rows, int64_t *classes) {
    if (!is_float_dtype((IrDType)t->dtype) || t->rank < 2) return false;
    int64_t c = 1;
    int wide = 0;
    for (int i = 1; i < t->rank; i++)
        if (t->dims[i] > 1) {
            wide++;
            c = t->dims[i];
        }
    if (wide != 1 || c < 2 || t->dims[0] < 1) return false;
    *rows = t->dims[0];
    *classes = c;
    return true;
}

/* The indices of the k largest of row[0..c) into top (ties: the lower index first). */
static void top_k(const double *row, int64_t c, int k, int64_t *top) {
    int n = 0;
    for (int64_t i = 0; i < c; i++) {
        if (isnan(row[i])) continue;
        int at = n;
        while (at > 0 && row[i] > row[top[at - 1]]) at--;
        if (at >= k) continue;
        for (int j = (n < k ? n : k - 1); j > at; j--) top[j] = top[j - 1];
        top[at] = i;
        if (n < k) n++;
    }
    for (; n < k; n++) top[n] = -1;
}

static bool same_set(const int64_t *a, const int64_t *b, int k) {
    for (int i = 0; i < k; i++) {
        bool found = false;
        for (int j = 0; j < k && !found; j++) found = a[i] == b[j];
        if (!found) return false;
    }
    return true;
}

/* Compares kiln's data ra with the reference rb, both of the given type; scores: compute
 * the top-k figures when the shape looks like class scores (graph outputs only). */
static void compare(const IrType *type, const unsigned char *ra, const unsigned char *rb,
                    double rtol, double atol, bool scores, Stats *st) {
    IrDType t = (IrDType)type->dtype;
    int64_t n = ir_type_numel(type);
    double dot = 0, na = 0, nb = 0;
    st->n = n;
    st->worst = -1;
    double *a = malloc((size_t)(n ? n : 1) * sizeof *a);
    double *b = malloc((size_t)(n ? n : 1) * sizeof *b);
    if (!a || !b) {
        snprintf(st->error, sizeof st->error, "out of memory");
        free(a);
        free(b);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        a[i] = element(ra, t, i);
        b[i] = element(rb, t, i);
        /* NaN matches NaN and an infinity the same infinity; otherwise they are errors of
         * infinite size. */
        double err;
        bool ok;
        if (isnan(a[i]) || isnan(b[i])) {
            ok = isnan(a[i]) && isnan(b[i]);
            err = ok ? 0 : INFINITY;
        } else if (a[i] == b[i]) {
            ok = true;
            err = 0;
        } else if (isinf(a[i]) || isinf(b[i])) {
            ok = false;
            err = INFINITY;
        } else {
            err = fabs(a[i] - b[i]);
            ok = err <= atol + rtol * fabs(b[i]);
        }
        st->n_bad += !ok;
        if (st->worst < 0 || err > st->max_abs) {
            st->max_abs = err;
            st->worst = i;
        }
        if (b[i] != 0 && !isnan(b[i]) && err > 0) {
            double rel = isinf(b[i]) ? INFINITY : err / fabs(b[i]);
            if (rel > st->max_rel) st->max_rel = rel;
        }
        if (isfinite(a[i]) && isfinite(b[i])) {
            dot += a[i] * b[i];
            na += a[i] * a[i];
            nb += b[i] * b[i];
        }
    }
    if (na == 0 && nb == 0) st->cosine = 1;
    else if (na == 0 || nb == 0) st->cosine = 0;
    else st->cosine = dot / (sqrt(na) * sqrt(nb));
    if (st->worst >= 0) {
        st->worst_kiln = a[st->worst];
        st->worst_ort = b[st->worst];
    }
    int64_t classes;
    if (scores && classifier_shape(type, &st->rows, &classes)) {
        st->classifier = true;
        st->has_topk = classes > VALIDATE_TOP_K;
        for (int64_t r = 0; r < st->rows; r++) {
            int64_t ta[VALIDATE_TOP_K], tb[VALIDATE_TOP_K];
            int k = st->has_topk ? VALIDATE_TOP_K : 1;
            top_k(a + r * classes, classes, k, ta);
            top_k(b + r * classes, classes, k, tb);
            st->top1 += ta[0] == tb[0];
            st->topk += st->has_topk && same_set(ta, tb, k);
        }
    }
    st->pass = st->n_bad == 0;
    free(a);
    free(b);
}

/* Reads kiln's and ORT's files of compared value k and fills its stats. */
static void compare_files(const char *work, const IrGraph *g, uint32_t k, const ValidateOpts *o,
                          bool scores, Stats *st) {
    const IrType *type = &g->values[g->outputs[k]].type;
    char *out = fmt_alloc("%s/out_%u.bin", work, k), *ref = fmt_alloc("%s/ref_%u.bin", work, k);
    char *err = fmt_alloc("%s/ref_%u.bin.err", work, k);
    size_t la = 0, lb = 0;
    char *a = NULL, *b = NULL, *msg = NULL;
    size_t want = ir_dtype_size_bytes((IrDType)type->dtype, ir_type_numel(type));
    if (!out || !ref || !err) {
        snprintf(st->error, sizeof st->error, "out of memory");
    } else if ((msg = read_all(err, NULL)) != NULL) {
        msg[strcspn(msg, "\n")] = 0;
        snprintf(st->error, sizeof st->error, "%s", msg);
    } else if (!comparable_dtype((IrDType)type->dtype)) {
        snprintf(st->error, sizeof st->error, "validate cannot compare %s data",
                 ir_dtype_name((IrDType)type->dtype));
    } else if (!(a = read_all(out, &la)) || la != want) {
        snprintf(st->error, sizeof st->error, "the bundle's output file is missing or short");
    } else if (!(b = read_all(ref, &lb)) || lb != want) {
        snprintf(st->error, sizeof st->error, "ONNX Runtime's output file is missing or short");
    } else {
        compare(type, (unsigned char *)a, (unsigned char *)b, o->rtol, o->atol, scores, st);
    }
    free(msg);
    free(a);
    free(b);
    free(out);
    free(ref);
    free(err);
}

/* ---- the report ---------------------------------------------------------------------- */

static void print_index(FILE *f, const IrType *t, int64_t flat) {
    int64_t idx[IR_MAX_RANK];
    for (int i = t->rank - 1; i >= 0; i--) {
        int64_t d = t->dims[i] > 0 ? t->dims[i] : 1;
        idx[i] = flat % d;
        flat /= d;
    }
    fputc('[', f);
    for (int i = 0; i < t->rank; i++) fprintf(f, "%s%lld", i ? "," : "", (long long)idx[i]);
    fputc(']', f);
}

static void print_stats(FILE *f, const IrType *t, const Stats *st) {
    if (st->error[0]) {
        fprintf(f, "not compared: %s", st->error);
        return;
    }
    fprintf(f, "max abs %.3g, max rel %.3g, cosine %.7f", st->max_abs, st->max_rel, st->cosine);
    if (st->classifier) {
        fprintf(f, ", top-1 %lld/%lld", (long long)st->top1, (long long)st->rows);
        if (st->has_topk)
            fprintf(f, ", top-%d %lld/%lld", VALIDATE_TOP_K, (long long)st->topk,
                    (long long)st->rows);
    }
    if (!st->pass && st->worst >= 0) {
        fprintf(f, "; %lld of %lld elements out of tolerance, worst at ", (long long)st->n_bad,
                (long long)st->n);
        print_index(f, t, st->worst);
        fprintf(f, ": kiln %.9g, ort %.9g", st->worst_kiln, st->worst_ort);
    }
}

static void json_double(CliJson *j, const char *key, double v) {
    cli_json_key(j, key);
    cli_json_double(j, v);
}

static void json_dims(CliJson *j, const IrType *t) {
    cli_json_array_begin(j, true);
    for (int i = 0; i < t->rank; i++) cli_json_int(j, t->dims[i]);
    cli_json_array_end(j);
}

static void json_stats(CliJson *j, const IrGraph *g, uint32_t v, const Stats *st) {
    cli_json_key(j, "name");
    cli_json_string(j, g->values[v].name);
    cli_json_key(j, "dtype");
    cli_json_string(j, ir_dtype_name((IrDType)g->values[v].type.dtype));
    cli_json_key(j, "shape");
    json_dims(j, &g->values[v].type);
    cli_json_key(j, "pass");
    cli_json_bool(j, !st->error[0] && st->pass);
    if (st->error[0]) {
        cli_json_key(j, "error");
        cli_json_string(j, st->error);
        return;
    }
    cli_json_key(j, "elements");
    cli_json_int(j, st->n);
    cli_json_key(j, "out_of_tolerance");
    cli_json_int(j, st->n_bad);
    json_double(j, "max_abs", st->max_abs);
    json_double(j, "max_rel", st->max_rel);
    json_double(j, "cosine", st->cosine);
    if (st->classifier) {
        cli_json_key(j, "rows");
        cli_json_int(j, st->rows);
        json_double(j, "top1", (double)st->top1 / (double)st->rows);
        if (st->has_topk) json_double(j, "top5", (double)st->topk / (double)st->rows);
    }
    if (st->worst >= 0 && st->max_abs > 0) {
        cli_json_key(j, "worst_index");
        cli_json_int(j, st->worst);
        json_double(j, "worst_kiln", st->worst_kiln);
        json_double(j, "worst_ort", st->worst_ort);
    }
}

/* ---- the command ------------------------------------------------------------------- */

static int parse_double(const char *flag, const char *s, double *out) {
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (!s[0] || *end || errno == ERANGE || !isfinite(v) || v < 0)
        return cli_usage_error("validate", "%s wants a number >= 0, got '%s'", flag, s);
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, ValidateOpts *o, bool *help) {
    const char *target = "c", *seed = NULL, *rtol = NULL, *atol = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int m;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            *help = true;
            return 0;
        }
        if (strcmp(argv[i], "--per-node") == 0) {
            o->per_node = true;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--target", &v)) != 0) {
            if (m < 0) return CLI_EXIT_USAGE;
            target = v;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--inputs", &v)) != 0) {
            if (m < 0) return CLI_EXIT_USAGE;
            o->inputs_dir = v;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--seed", &v)) != 0) {
            if (m < 0) return CLI_EXIT_USAGE;
            seed = v;
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
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--keep", &v)) != 0) {
            if (m < 0) return CLI_EXIT_USAGE;
            o->keep_dir = v;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--cc", &v)) != 0) {
            if (m < 0) return CLI_EXIT_USAGE;
            o->cc = v;
        } else if ((m = cli_flag_value("validate", argc, argv, &i, "--dim", &v)) != 0) {
            if (m < 0 || !cli_dims_add("validate", &o->dims, v)) return CLI_EXIT_USAGE;
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
    if (seed && o->inputs_dir)
        return cli_usage_error("validate", "--seed and --inputs exclude each other");
    if (seed) {
        char *end = NULL;
        errno = 0;
        long long s = strtoll(seed, &end, 10);
        if (seed[0] < '0' || seed[0] > '9' || *end || errno == ERANGE)
            return cli_usage_error("validate", "--seed wants an integer >= 0, got '%s'", seed);
        o->seed = s;
    }
    if (rtol && parse_double("--rtol", rtol, &o->rtol)) return CLI_EXIT_USAGE;
    if (atol && parse_double("--atol", atol, &o->atol)) return CLI_EXIT_USAGE;
    if (!o->cc[0] || strchr(o->cc, ' '))
        return cli_usage_error("validate", "--cc wants one program name, got '%s'", o->cc);
    struct stat sb;
    if (o->inputs_dir && (stat(o->inputs_dir, &sb) != 0 || !S_ISDIR(sb.st_mode)))
        return cli_usage_error("validate", "--inputs %s: not a folder", o->inputs_dir);
    return 0;
}

/* Records the nodes (graph order) before the bundle writer folds constants. */
static NodeRec *record_nodes(const IrGraph *g, uint32_t *n_out) {
    NodeRec *r = calloc(g->n_nodes + 1, sizeof *r);
    uint32_t n = 0;
    for (uint32_t i = 0; r && i < g->n_nodes; i++) {
        const IrNode *nd = &g->nodes[i];
        if (nd->dead || nd->op == IR_OP_CONSTANT) continue;
        NodeRec *x = &r[n++];
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
    cli_json_key(&j, "inputs_dir");
    if (o->inputs_dir) cli_json_string(&j, o->inputs_dir);
    else cli_json_null(&j);
    cli_json_key(&j, "seed");
    cli_json_int(&j, o->seed);
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

/* Runs the test program: weights, inputs, outputs as files. */
static bool run_bundle(const char *exe, const char *bundle, const char *work, const IrGraph *g) {
    uint32_t n = 2 + g->n_inputs + g->n_outputs;
    char **argv = calloc(n + 1, sizeof *argv);
    bool ok = argv != NULL;
    uint32_t k = 0;
    if (ok) {
        argv[k++] = (char *)exe;
        argv[k++] = fmt_alloc("%s/%s_weights.bin", bundle, VALIDATE_BUNDLE);
        for (uint32_t i = 0; i < g->n_inputs; i++) argv[k++] = fmt_alloc("%s/in_%u.bin", work, i);
        for (uint32_t i = 0; i < g->n_outputs; i++)
            argv[k++] = fmt_alloc("%s/out_%u.bin", work, i);
        for (uint32_t i = 1; i < k; i++) ok &= argv[i] != NULL;
    }
    char *log = path_join(work, "run.log");
    if (ok && log) {
        int st = run_process(argv, log);
        char *text = read_all(log, NULL);
        if (text) text[strcspn(text, "\n")] = 0;
        if (st != 0) {
            const char *status = text ? strstr(text, "status ") : NULL;
            int code = status ? atoi(status + 7) : 0;
            if (st == 1 && code > 0)
                fprintf(stderr, "kiln validate: error: the compiled model failed: status %d "
                        "(%s)\n", code, status_meaning(code));
            else
                fprintf(stderr, "kiln validate: error: the compiled model's test program "
                        "failed (exit %d%s%s)\n", st, text && text[0] ? ": " : "",
                        text ? text : "");
            ok = false;
        }
        free(text);
    } else {
        ok = false;
    }
    for (uint32_t i = 1; argv && i < k; i++) free(argv[i]);
    free(argv);
    free(log);
    return ok;
}

/* The report of outputs; returns how many failed. */
static uint32_t report_outputs(FILE *out, const IrGraph *g, const Compared *cmp,
                               uint32_t n) {
    uint32_t failed = 0;
    char type[128];
    for (uint32_t i = 0; i < n; i++) {
        const Stats *st = &cmp[i].st;
        const IrValue *val = &g->values[cmp[i].value];
        bool pass = !st->error[0] && st->pass;
        failed += !pass;
        type_text(type, sizeof type, &val->type);
        fprintf(out, "%s output '%s' %s: ", pass ? "PASS" : "FAIL", val->name, type);
        print_stats(out, &val->type, st);
        fprintf(out, "\n");
    }
    return failed;
}

static int find_compared(const Compared *cmp, uint32_t n, uint32_t v) {
    for (uint32_t i = 0; i < n; i++)
        if (cmp[i].value == v) return (int)i;
    return -1;
}

static void describe_input(FILE *f, const IrGraph *g, const Compared *cmp, uint32_t n_cmp,
                           uint32_t v) {
    const IrValue *val = &g->values[v];
    int k = find_compared(cmp, n_cmp, v);
    fprintf(f, "    input '%s': ", val->name);
    if (k >= 0) {
        fprintf(f, "%s", !cmp[k].st.error[0] && cmp[k].st.pass ? "within tolerance, " : "");
        print_stats(f, &val->type, &cmp[k].st);
    } else if (val->kind == IR_VALUE_INPUT) {
        fprintf(f, "a graph input (the same data on both sides)");
    } else if (val->kind == IR_VALUE_CONST) {
        fprintf(f, "a constant of the model");
    } else {
        fprintf(f, "not compared (no static numeric type)");
    }
    fprintf(f, "\n");
}

/* The per-node report; returns the index of the first diverging node, or -1. */
static int report_nodes(FILE *out, const IrGraph *g, const NodeRec *nodes, uint32_t n_nodes,
                        const Compared *cmp, uint32_t n_cmp) {
    int first = -1;
    char type[128];
    fprintf(out, "\nper node (graph order):\n");
    for (uint32_t i = 0; i < n_nodes; i++) {
        const NodeRec *nd = &nodes[i];
        bool any = false;
        for (uint32_t o = 0; o < nd->n_outputs; o++) {
            int k = nd->outputs[o] == IR_NONE ? -1 : find_compared(cmp, n_cmp, nd->outputs[o]);
            if (k < 0) continue;
            const Stats *st = &cmp[k].st;
            const IrValue *val = &g->values[nd->outputs[o]];
            type_text(type, sizeof type, &val->type);
            const char *verdict = st->error[0] ? "??  " : st->pass ? "ok  " : "DIFF";
            fprintf(out, "%s node %u %s%s%s%s -> '%s' %s: ", verdict, i, nd->op_type,
                   nd->name[0] ? " '" : "", nd->name, nd->name[0] ? "'" : "", val->name, type);
            print_stats(out, &val->type, st);
            fprintf(out, "\n");
            if (!st->error[0] && !st->pass && first < 0) first = (int)i;
            any = true;
        }
        if (!any)
            fprintf(out, "--   node %u %s%s%s%s: no output with a static numeric type to compare\n",
                   i, nd->op_type, nd->name[0] ? " '" : "", nd->name, nd->name[0] ? "'" : "");
    }
    if (first < 0) {
        fprintf(out, "no node diverges beyond the tolerance\n");
        return -1;
    }
    const NodeRec *nd = &nodes[first];
    fprintf(out, "\nfirst divergence: node %d%s%s%s (%s%s%s, opset %d)\n", first,
           nd->name[0] ? " '" : "", nd->name, nd->name[0] ? "'" : "",
           nd->domain[0] ? nd->domain : "", nd->domain[0] ? "." : "", nd->op_type, nd->opset);
    for (uint32_t o = 0; o < nd->n_outputs; o++) {
        int k = nd->outputs[o] == IR_NONE ? -1 : find_compared(cmp, n_cmp, nd->outputs[o]);
        if (k < 0) continue;
        fprintf(out, "    output '%s': ", g->values[nd->outputs[o]].name);
        print_stats(out, &g->values[nd->outputs[o]].type, &cmp[k].st);
        fprintf(out, "\n");
    }
    for (uint32_t i = 0; i < nd->n_inputs; i++)
        if (nd->inputs[i] != IR_NONE) describe_input(out, g, cmp, n_cmp, nd->inputs[i]);
    return first;
}

/* A value next to a node: its figures when compared, else what it is. */
static void json_value_of(CliJson *j, const IrGraph *g, const Compared *cmp, uint32_t n_cmp,
                          uint32_t v) {
    cli_json_object_begin(j, false);
    int k = find_compared(cmp, n_cmp, v);
    if (k >= 0) {
        json_stats(j, g, v, &cmp[k].st);
    } else {
        cli_json_key(j, "name");
        cli_json_string(j, g->values[v].name);
        cli_json_key(j, "kind");
        cli_json_string(j, g->values[v].kind == IR_VALUE_INPUT   ? "graph input"
                           : g->values[v].kind == IR_VALUE_CONST ? "constant"
                                                                 : "not compared");
    }
    cli_json_object_end(j);
}

static bool write_json(const ValidateOpts *o, const char *ort, const IrGraph *g,
                       const Compared *cmp, uint32_t n_cmp, uint32_t n_orig,
                       const NodeRec *nodes, uint32_t n_nodes, int first, bool pass) {
    bool to_stdout = strcmp(o->json_path, "-") == 0;
    FILE *f = to_stdout ? stdout : fopen(o->json_path, "wb");
    if (!f) {
        fprintf(stderr, "kiln validate: error: %s: %s\n", o->json_path, strerror(errno));
        return false;
    }
    CliJson j;
    cli_json_init(&j, f);
    cli_json_object_begin(&j, false);
    cli_json_key(&j, "model");
    cli_json_string(&j, o->model);
    cli_json_key(&j, "target");
    cli_json_string(&j, "c");
    cli_json_key(&j, "reference");
    cli_json_string(&j, ort);
    cli_json_key(&j, "inputs");
    if (o->inputs_dir) {
        cli_json_string(&j, o->inputs_dir);
    } else {
        cli_json_object_begin(&j, true);
        cli_json_key(&j, "seed");
        cli_json_int(&j, o->seed);
        cli_json_key(&j, "dist");
        cli_json_string(&j, o->dist);
        cli_json_object_end(&j);
    }
    json_double(&j, "rtol", o->rtol);
    json_double(&j, "atol", o->atol);
    cli_json_key(&j, "pass");
    cli_json_bool(&j, pass);
    cli_json_key(&j, "outputs");
    cli_json_array_begin(&j, false);
    for (uint32_t i = 0; i < n_orig; i++) {
        cli_json_object_begin(&j, false);
        json_stats(&j, g, cmp[i].value, &cmp[i].st);
        cli_json_object_end(&j);
    }
    cli_json_array_end(&j);
    if (o->per_node) {
        cli_json_key(&j, "nodes");
        cli_json_array_begin(&j, false);
        for (uint32_t i = 0; i < n_nodes; i++) {
            cli_json_object_begin(&j, false);
            cli_json_key(&j, "index");
            cli_json_uint(&j, i);
            cli_json_key(&j, "name");
            cli_json_string(&j, nodes[i].name);
            cli_json_key(&j, "op");
            cli_json_string(&j, nodes[i].op_type);
            cli_json_key(&j, "opset");
            cli_json_int(&j, nodes[i].opset);
            cli_json_key(&j, "outputs");
            cli_json_array_begin(&j, false);
            for (uint32_t k = 0; k < nodes[i].n_outputs; k++) {
                uint32_t v = nodes[i].outputs[k];
                int c = v == IR_NONE ? -1 : find_compared(cmp, n_cmp, v);
                if (c < 0) continue;
                cli_json_object_begin(&j, false);
                json_stats(&j, g, v, &cmp[c].st);
                cli_json_object_end(&j);
            }
            cli_json_array_end(&j);
            cli_json_key(&j, "inputs");
            cli_json_array_begin(&j, true);
            for (uint32_t k = 0; k < nodes[i].n_inputs; k++)
                if (nodes[i].inputs[k] != IR_NONE)
                    cli_json_string(&j, g->values[nodes[i].inputs[k]].name);
            cli_json_array_end(&j);
            cli_json_object_end(&j);
        }
        cli_json_array_end(&j);
        cli_json_key(&j, "first_divergence");
        if (first < 0) {
            cli_json_null(&j);
        } else {
            const NodeRec *nd = &nodes[first];
            cli_json_object_begin(&j, false);
            cli_json_key(&j, "index");
            cli_json_int(&j, first);
            cli_json_key(&j, "name");
            cli_json_string(&j, nd->name);
            cli_json_key(&j, "op");
            cli_json_string(&j, nd->op_type);
            cli_json_key(&j, "domain");
            cli_json_string(&j, nd->domain);
            cli_json_key(&j, "opset");
            cli_json_int(&j, nd->opset);
            cli_json_key(&j, "outputs");
            cli_json_array_begin(&j, false);
            for (uint32_t k = 0; k < nd->n_outputs; k++)
                if (nd->outputs[k] != IR_NONE &&
                    find_compared(cmp, n_cmp, nd->outputs[k]) >= 0)
                    json_value_of(&j, g, cmp, n_cmp, nd->outputs[k]);
            cli_json_array_end(&j);
            cli_json_key(&j, "inputs");
            cli_json_array_begin(&j, false);
            for (uint32_t k = 0; k < nd->n_inputs; k++)
                if (nd->inputs[k] != IR_NONE) json_value_of(&j, g, cmp, n_cmp, nd->inputs[k]);
            cli_json_array_end(&j);
            cli_json_object_end(&j);
        }
    }
    cli_json_object_end(&j);
    cli_json_finish(&j);
    if (to_stdout) return fflush(stdout) == 0;
    if (fclose(f) != 0) {
        fprintf(stderr, "kiln validate: error: cannot write %s\n", o->json_path);
        return false;
    }
    return true;
}

/* Loads the model. Symbolic dimensions of the inputs that no --dim fixes are set to 1 (a
 * batch of one; validation needs some value and the user can choose another). */
static IrGraph *load_model(ValidateOpts *o) {
    Diag d;
    diag_init(&d);
    OnnxLoadOptions lo = cli_load_options(&o->dims, NULL);
    IrGraph *g = onnx_load_file(o->model, &lo, &d); /* quiet: the load below speaks */
    bool usable = g && !diag_has_errors(&d);
    diag_free(&d);
    for (uint32_t i = 0; usable && i < g->n_inputs; i++) {
        const IrType *t = &g->values[g->inputs[i]].type;
        for (int k = 0; t->kind == IR_TYPE_TENSOR && k < t->rank; k++) {
            const char *sym = t->dims[k] < 0 && t->syms[k] ? ir_graph_sym_name(g, t->syms[k])
                                                           : NULL;
            if (!sym || strchr(sym, '=')) continue;
            bool given = false;
            for (uint32_t j = 0; j < o->dims.n && !given; j++)
                given = strcmp(o->dims.items[j].name, sym) == 0;
            char *spec = given ? NULL : fmt_alloc("%s=1", sym);
            if (spec && cli_dims_add("validate", &o->dims, spec))
                fprintf(stderr, "kiln validate: note: symbolic dimension '%s' set to 1 (choose "
                        "with --dim %s=N)\n", sym, sym);
            free(spec);
        }
    }
    if (g) ir_graph_free(g);
    return cli_load_model("validate", o->model, &o->dims, NULL);
}

/* Everything after the arguments: returns the exit code. */
static int validate(ValidateOpts *o, const char *work) {
    int rc = CLI_EXIT_MODEL;
    NodeRec *nodes = NULL;
    uint32_t n_nodes = 0;
    Compared *cmp = NULL;
    char *bundle = path_join(work, "bundle"), *manifest = path_join(work, "manifest.json");
    char *exe = NULL, *ort = NULL, *ort_path = path_join(work, "ort.txt");
    IrGraph *g = load_model(o);
    if (!g || !bundle || !manifest || !ort_path) goto done;
    uint32_t n_orig = g->n_outputs;
    if (o->per_node) {
        cgen_expose_intermediates(g);
        nodes = record_nodes(g, &n_nodes);
        if (!nodes) goto done;
    }
    CgenOptions copts = {.name = VALIDATE_BUNDLE, .test_main = true, .model_path = o->model};
    Diag d;
    diag_init(&d);
    bool ok = cgen_write_bundle(g, &copts, bundle, &d);
    diag_print(&d, stderr, o->model);
    diag_free(&d);
    if (!ok) goto done;
    if (!write_manifest(manifest, work, g, n_orig, o)) {
        fprintf(stderr, "kiln validate: error: cannot write %s\n", manifest);
        goto done;
    }
    if (!build_bundle(bundle, work, o->cc, &exe)) goto done;
    rc = run_reference(work, manifest);
    if (rc != CLI_EXIT_OK) goto done;
    rc = CLI_EXIT_MODEL;
    if (!run_bundle(exe, bundle, work, g)) goto done;

    ort = read_all(ort_path, NULL);
    if (ort) ort[strcspn(ort, "\n")] = 0;
    cmp = calloc(g->n_outputs + 1, sizeof *cmp);
    if (!cmp) goto done;
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        cmp[i].value = g->outputs[i];
        compare_files(work, g, i, o, i < n_orig, &cmp[i].st);
    }
    /* With --json - stdout carries the JSON alone; the report goes to stderr. */
    FILE *out = o->json_path && strcmp(o->json_path, "-") == 0 ? stderr : stdout;
    fprintf(out, "kiln validate: %s, kiln C bundle against %s\n", o->model,
            ort ? ort : "onnxruntime");
    if (o->inputs_dir)
        fprintf(out, "inputs: from %s\n", o->inputs_dir);
    else
        fprintf(out, "inputs: random, seed %lld: floats %s, integers in [0, 4), bools 50/50\n",
               (long long)o->seed,
               strcmp(o->dist, "normal") == 0 ? "normal (0, 1)" : "uniform in [-1, 1)");
    fprintf(out, "tolerance: |kiln - ort| <= %g + %g * |ort|\n", o->atol, o->rtol);
    uint32_t failed = report_outputs(out, g, cmp, n_orig);
    int first = -1;
    if (o->per_node) first = report_nodes(out, g, nodes, n_nodes, cmp, g->n_outputs);
    if (failed) fprintf(out, "\nFAIL: %u of %u outputs out of tolerance\n", failed, n_orig);
    else fprintf(out, "\nPASS: %u of %u outputs within tolerance\n", n_orig, n_orig);
    rc = failed ? CLI_EXIT_MODEL : CLI_EXIT_OK;
    if (o->json_path &&
        !write_json(o, ort ? ort : "onnxruntime", g, cmp, g->n_outputs, n_orig, nodes, n_nodes,
                    first, failed == 0))
        rc = CLI_EXIT_MODEL;
done:
    for (uint32_t i = 0; nodes && i < n_nodes; i++) {
        free(nodes[i].inputs);
        free(nodes[i].outputs);
    }
    free(nodes);
    free(cmp);
    free(exe);
    free(ort);
    free(ort_path);
    free(bundle);
    free(manifest);
    if (g) ir_graph_free(g);
    return rc;
}

int cli_validate_run(int argc, char **argv) {
    ValidateOpts o = {0};
    o.rtol = VALIDATE_RTOL;
    o.atol = VALIDATE_ATOL;
    o.cc = "cc";
    o.dist = "uniform";
    bool help = false;
    int rc = parse_args(argc, argv, &o, &help);
    if (help) fputs(cli_validate_help, stdout);
    if (help || rc != 0) {
        cli_dims_free(&o.dims);
        return help ? CLI_EXIT_OK : rc;
    }
    char *work = NULL;
    if (o.keep_dir) {
        if (mkdir(o.keep_dir, 0777) != 0 && errno != EEXIST) {
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
