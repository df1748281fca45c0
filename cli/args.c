/* Argument helpers shared by the subcommands: usage errors, flags with values, --dim and
 * --shape parsing, and loading a model with its diagnostics printed. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (strcmp(cmd, "kiln") == 0)
        fprintf(stderr, "kiln: ");
    else
        fprintf(stderr, "kiln %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (strcmp(cmd, "kiln") == 0)
        fprintf(stderr, "\nTry 'kiln --help'.\n");
    else
        fprintf(stderr, "\nTry 'kiln help %s'.\n", cmd);
    return CLI_EXIT_USAGE;
}

int cli_flag_value(const char *cmd, int argc, char **argv, int *i, const char *flag,
                   const char **value) {
    const char *arg = argv[*i];
    size_t len = strlen(flag);
    if (strncmp(arg, flag, len) != 0) return 0;
    if (arg[len] == '=') {
        *value = arg + len + 1;
        return 1;
    }
    if (arg[len] != '\0') return 0;
    if (*i + 1 >= argc) {
        cli_usage_error(cmd, "option '%s' needs a value", flag);
        return -1;
    }
    *value = argv[++*i];
    return 1;
}

bool cli_dims_add(const char *cmd, CliDims *dims, const char *spec) {
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || eq[1] == '\0') {
        cli_usage_error(cmd, "--dim wants NAME=VALUE, got '%s'", spec);
        return false;
    }
    const char *digits = eq + 1;
    char *end = NULL;
    errno = 0;
    long long value = strtoll(digits, &end, 10);
    /* Decimal digits only: no sign, no spaces, no hex, nothing after. */
    if (digits[0] < '0' || digits[0] > '9' || *end != '\0' || errno == ERANGE) {
        cli_usage_error(cmd, "--dim %s: VALUE must be an integer >= 0", spec);
        return false;
    }
    size_t name_len = (size_t)(eq - spec);
    for (uint32_t i = 0; i < dims->n; i++)
        if (strlen(dims->items[i].name) == name_len &&
            strncmp(dims->items[i].name, spec, name_len) == 0) {
            cli_usage_error(cmd, "--dim %.*s given twice", (int)name_len, spec);
            return false;
        }
    if (dims->n == dims->cap) {
        uint32_t cap = dims->cap ? dims->cap * 2 : 4;
        OnnxDimOverride *p = realloc(dims->items, cap * sizeof *p);
        if (!p) {
            fprintf(stderr, "%s: out of memory\n", cmd);
            return false;
        }
        dims->items = p;
        dims->cap = cap;
    }
    char *name = strndup(spec, name_len);
    if (!name) {
        fprintf(stderr, "%s: out of memory\n", cmd);
        return false;
    }
    dims->items[dims->n++] = (OnnxDimOverride){name, (int64_t)value};
    return true;
}

#define CLI_SHAPE_SPEC_MAX 4096 /* one --shape argument; longer is a mistake */

/* Parses the dims "1x3x48x192" (decimal, >= 0, 'x' between) of --shape item into s. */
static bool parse_dims(const char *cmd, const char *item, const char *text, OnnxShapeOverride *s) {
    s->rank = 0;
    const char *p = text;
    for (;;) {
        char *end = NULL;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (p[0] < '0' || p[0] > '9' || errno == ERANGE || (*end && *end != 'x' && *end != 'X')) {
            cli_usage_error(cmd, "--shape %s: the dims must be decimal integers >= 0 joined by "
                            "'x', as in x=1x3x224x224", item);
            return false;
        }
        if (s->rank == IR_MAX_RANK) {
            cli_usage_error(cmd, "--shape %s: more than %d dims", item, IR_MAX_RANK);
            return false;
        }
        s->dims[s->rank++] = (int64_t)v;
        if (!*end) return true;
        p = end + 1;
    }
}

static bool add_one_shape(const char *cmd, CliDims *dims, const char *item) {
    /* INPUT=DIMS, or INPUT:DIMS (trtexec); the last separator counts, since input names
     * may hold either (tf2onnx writes "input_1:0") */
    const char *sep = strrchr(item, '=');
    if (!sep) sep = strrchr(item, ':');
    if (!sep || sep == item || !sep[1]) {
        cli_usage_error(cmd, "--shape wants INPUT=DIMS (as in x=1x3x224x224), got '%s'", item);
        return false;
    }
    size_t name_len = (size_t)(sep - item);
    OnnxShapeOverride s;
    memset(&s, 0, sizeof s);
    if (!parse_dims(cmd, item, sep + 1, &s)) return false;
    for (uint32_t i = 0; i < dims->n_shapes; i++)
        if (strlen(dims->shapes[i].input) == name_len &&
            strncmp(dims->shapes[i].input, item, name_len) == 0) {
            cli_usage_error(cmd, "--shape %.*s given twice", (int)name_len, item);
            return false;
        }
    if (dims->n_shapes == dims->cap_shapes) {
        uint32_t cap = dims->cap_shapes ? dims->cap_shapes * 2 : 4;
        OnnxShapeOverride *p = realloc(dims->shapes, cap * sizeof *p);
        if (!p) {
            fprintf(stderr, "%s: out of memory\n", cmd);
            return false;
        }
        dims->shapes = p;
        dims->cap_shapes = cap;
    }
    s.input = strndup(item, name_len);
    if (!s.input) {
        fprintf(stderr, "%s: out of memory\n", cmd);
        return false;
    }
    dims->shapes[dims->n_shapes++] = s;
    return true;
}

bool cli_shape_add(const char *cmd, CliDims *dims, const char *spec) {
    if (strlen(spec) > CLI_SHAPE_SPEC_MAX) {
        cli_usage_error(cmd, "--shape: argument longer than %d characters", CLI_SHAPE_SPEC_MAX);
        return false;
    }
    char buf[CLI_SHAPE_SPEC_MAX + 1];
    strcpy(buf, spec);
    char *save = NULL;
    bool any = false;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        if (!add_one_shape(cmd, dims, item)) return false;
        any = true;
    }
    if (!any) cli_usage_error(cmd, "--shape wants INPUT=DIMS (as in x=1x3x224x224)");
    return any;
}

void cli_dims_free(CliDims *dims) {
    for (uint32_t i = 0; i < dims->n; i++)
        free((char *)dims->items[i].name);
    free(dims->items);
    for (uint32_t i = 0; i < dims->n_shapes; i++)
        free((char *)dims->shapes[i].input);
    free(dims->shapes);
    *dims = (CliDims){0};
}

bool cli_mkdir_parents(const char *path) {
    char *p = strdup(path);
    bool ok = p != NULL;
    /* every '/' after the first character ends a parent: make it, in order */
    for (char *s = p ? strchr(p + 1, '/') : NULL; ok && s; s = strchr(s + 1, '/')) {
        *s = '\0';
        struct stat st;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "kiln: error: cannot create %s: %s\n", p, strerror(errno));
            ok = false;
        } else if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
            fprintf(stderr, "kiln: error: %s is not a folder\n", p);
            ok = false;
        }
        *s = '/';
    }
    free(p);
    return ok;
}

OnnxLoadOptions cli_load_options(const CliDims *dims, uint32_t *n_override_errors) {
    OnnxLoadOptions o = {.dims = dims->items, .n_dims = dims->n, .infer_shapes = true,
                         .shapes = dims->shapes, .n_shapes = dims->n_shapes,
                         .n_override_errors = n_override_errors};
    return o;
}

IrGraph *cli_load_model(const char *cmd, const char *path, const CliDims *dims, int *rc) {
    Diag d;
    diag_init(&d);
    uint32_t bad = 0;
    OnnxLoadOptions opts = cli_load_options(dims, &bad);
    IrGraph *g = onnx_load_file(path, &opts, &d);
    diag_print(&d, stderr, path);
    if (g && diag_has_errors(&d)) {
        ir_graph_free(g);
        g = NULL;
    }
    if (!g && !diag_has_errors(&d))
        fprintf(stderr, "%s: error: the model could not be loaded\n", path);
    if (!g && bad) fprintf(stderr, "Try 'kiln help %s'.\n", cmd);
    if (rc && !g) *rc = bad ? CLI_EXIT_USAGE : CLI_EXIT_MODEL;
    diag_free(&d);
    return g;
}

/* Appends s to *buf (growing it), single-quoted when it holds a character a shell treats
 * specially. */
static void append_word(char **buf, size_t *len, size_t *cap, const char *s) {
    bool plain = s[0] != 0;
    for (const char *p = s; *p && plain; p++)
        plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,/=:+%@",
                       *p) != NULL;
    size_t need = *len + 4 * strlen(s) + 4;
    if (need > *cap) {
        *cap = need * 2;
        char *p = realloc(*buf, *cap);
        IR_ASSERT(p);
        *buf = p;
    }
    char *o = *buf + *len;
    if (*len) *o++ = ' ';
    if (!plain) *o++ = '\'';
    for (const char *p = s; *p; p++) {
        if (*p == '\'' && !plain) { /* close, escaped quote, reopen */
            memcpy(o, "'\\''", 4);
            o += 4;
        } else {
            *o++ = *p;
        }
    }
    if (!plain) *o++ = '\'';
    *o = 0;
    *len = (size_t)(o - *buf);
}

char *cli_command_line(const char *cmd, int argc, char **argv, const char *model) {
    char *buf = NULL;
    size_t len = 0, cap = 0;
    const char *base = strrchr(model, '/');
    append_word(&buf, &len, &cap, "kiln");
    append_word(&buf, &len, &cap, cmd);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            i++;
            continue;
        }
        if (strncmp(a, "--output=", 9) == 0) continue;
        append_word(&buf, &len, &cap, a == model && base ? base + 1 : a);
    }
    return buf;
}
