/* golden_pass: golden tests of the passes, text in, text out.
 *   golden_pass [--bless] PATH...   (a PATH that is a folder means its *.ir files)
 * A file holds a first line "### passes: NAME..." (run in that order), the input IR, a line
 * "### expected", and the expected IR as printed in full after the passes. ir_verify runs
 * on the input and after every pass (on the printed-and-parsed graph). With --bless, a differing expectation is rewritten
 * (review the diff). Ends with "N passed, N failed"; exit status 1 when any failed. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ir/ir.h"
#include "tool_text.h"
#include "passes/passes.h"

#define GP_PASSES_TAG "### passes:"
#define GP_EXPECTED_TAG "### expected\n"



/* ir_verify on the graph as its text form has it (printed in full and parsed back): values
 * that a pass left without producer or reader (a removed node's outputs) are not part of
 * the text, and ir_verify as it stands reports them; see docs/passes.md. */
static bool verify(const IrGraph *g, const char *path, const char *after) {
    Diag d;
    diag_init(&d);
    char *text = ir_print_to_string(g, &(IrPrintOpts){true});
    IrGraph *copy = ir_parse(text, strlen(text), &d);
    bool ok = copy && ir_verify(copy, &d);
    if (!ok) {
        printf("FAIL %s: ir_verify fails after %s\n", path, after);
        diag_print(&d, stdout, path);
    }
    if (copy) ir_graph_free(copy);
    free(text);
    diag_free(&d);
    return ok;
}

/* Runs the passes of the header on g; false (after a report) on any failure. */
static bool run_passes(IrGraph *g, char *names, const char *path) {
    if (!verify(g, path, "parsing")) return false;
    for (char *tok = strtok(names, " \t"); tok; tok = strtok(NULL, " \t")) {
        Diag d;
        diag_init(&d);
        bool changed = false;
        bool known = pass_run_named(g, tok, &d, &changed);
        bool ok = known && d.n_errors == 0;
        if (!known) printf("FAIL %s: unknown pass '%s'\n", path, tok);
        else if (!ok) printf("FAIL %s: pass '%s' reported errors\n", path, tok);
        diag_print(&d, stdout, path);
        diag_free(&d);
        if (!ok || !verify(g, path, tok)) return false;
    }
    return true;
}

/* 1 passed, 0 failed */
static int check_file(const char *path, int bless) {
    size_t len = 0;
    char *text = tool_read_all(path, &len);
    if (!text) {
        printf("FAIL %s: cannot read\n", path);
        return 0;
    }
    char *nl = strchr(text, '\n');
    char *exp = strstr(text, GP_EXPECTED_TAG);
    if (strncmp(text, GP_PASSES_TAG, strlen(GP_PASSES_TAG)) != 0 || !nl || !exp || exp < nl) {
        printf("FAIL %s: want '%s NAME...', the input, '%s', the expected output\n", path,
               GP_PASSES_TAG, "### expected");
        free(text);
        return 0;
    }
    size_t head_len = (size_t)(nl - text);
    char names[512];
    size_t nlen = head_len - strlen(GP_PASSES_TAG);
    if (nlen >= sizeof names) nlen = sizeof names - 1;
    memcpy(names, text + strlen(GP_PASSES_TAG), nlen);
    names[nlen] = 0;
    const char *input = nl + 1, *expected = exp + strlen(GP_EXPECTED_TAG);
    Diag d;
    diag_init(&d);
    IrGraph *g = ir_parse(input, (size_t)(exp - input), &d);
    int ok = 0;
    if (!g) {
        printf("FAIL %s: the input does not parse\n", path);
        diag_print(&d, stdout, path);
    } else if (run_passes(g, names, path)) {
        char *printed = ir_print_to_string(g, &(IrPrintOpts){true});
        if (strcmp(printed, expected) == 0) {
            ok = 1;
        } else if (bless) {
            FILE *f = fopen(path, "wb");
            size_t keep = (size_t)(expected - text);
            ok = f && fwrite(text, 1, keep, f) == keep &&
                 fwrite(printed, 1, strlen(printed), f) == strlen(printed);
            if (f) fclose(f);
            printf("%s %s\n", ok ? "BLESSED" : "FAIL (cannot write)", path);
        } else {
            printf("FAIL %s: the output differs from the expectation\n", path);
            tool_show_first_difference(expected, printed, "expected line", "expected: ", "got:      ", 0);
        }
        free(printed);
    }
    if (g) ir_graph_free(g);
    diag_free(&d);
    free(text);
    return ok;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Checks every *.ir file of folder dir in name order; adds to *passed and *failed. */
static void check_dir(const char *dir, int bless, int *passed, int *failed) {
    DIR *dp = opendir(dir);
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while (dp && (e = readdir(dp))) {
        size_t nl = strlen(e->d_name);
        if (nl < 4 || strcmp(e->d_name + nl - 3, ".ir") != 0) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **n2 = realloc(names, cap * sizeof *n2);
            if (!n2) break;
            names = n2;
        }
        size_t plen = strlen(dir) + nl + 2;
        names[n] = malloc(plen);
        snprintf(names[n], plen, "%s/%s", dir, e->d_name);
        n++;
    }
    if (dp) closedir(dp);
    if (n) qsort(names, n, sizeof *names, cmp_str);
    for (size_t k = 0; k < n; k++) {
        if (check_file(names[k], bless)) (*passed)++;
        else (*failed)++;
        free(names[k]);
    }
    free(names);
}

int main(int argc, char **argv) {
    int bless = 0, passed = 0, failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (strcmp(argv[i], "--bless") == 0) bless = 1;
        else if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
            check_dir(argv[i], bless, &passed, &failed);
        else if (check_file(argv[i], bless)) passed++;
        else failed++;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
