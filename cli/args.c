/* Argument helpers shared by the subcommands: usage errors, flags with values, --dim
 * parsing, and loading a model with its diagnostics printed. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void cli_dims_free(CliDims *dims) {
    for (uint32_t i = 0; i < dims->n; i++)
        free((char *)dims->items[i].name);
    free(dims->items);
    *dims = (CliDims){0};
}

IrGraph *cli_load_model(const char *path, const CliDims *dims) {
    Diag d;
    diag_init(&d);
    OnnxLoadOptions opts = {dims->items, dims->n, true};
    IrGraph *g = onnx_load_file(path, &opts, &d);
    diag_print(&d, stderr, path);
    if (g && diag_has_errors(&d)) {
        ir_graph_free(g);
        g = NULL;
    }
    if (!g && !diag_has_errors(&d))
        fprintf(stderr, "%s: error: the model could not be loaded\n", path);
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
