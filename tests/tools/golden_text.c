/* golden_text: checks that IR text files are fixed points of parse-then-print.
 *   golden_text [--bless] PATH...   (a PATH that is a folder means its *.ir files)
 * Each file is parsed and printed in full; a difference is reported with the first differing
 * line. With --bless, differing files are rewritten with the printed text (review the diff).
 * Ends with "N passed, N failed"; exit status 1 when any failed. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ir/ir.h"
#include "tool_text.h"



/* 1 passed, 0 failed */
static int check_file(const char *path, int bless) {
    size_t len = 0;
    char *text = tool_read_all(path, &len);
    if (!text) {
        printf("FAIL %s: cannot read\n", path);
        return 0;
    }
    Diag d;
    diag_init(&d);
    IrGraph *g = ir_parse(text, len, &d);
    int ok = 0;
    if (!g) {
        printf("FAIL %s: does not parse\n", path);
        diag_print(&d, stdout, path);
    } else {
        IrPrintOpts opts = {true};
        char *printed = ir_print_to_string(g, &opts);
        if (strcmp(printed, text) == 0) {
            ok = 1;
        } else if (bless) {
            FILE *f = fopen(path, "wb");
            ok = f && fwrite(printed, 1, strlen(printed), f) == strlen(printed);
            if (f) fclose(f);
            printf("%s %s\n", ok ? "BLESSED" : "FAIL (cannot write)", path);
        } else {
            printf("FAIL %s: parse-then-print differs\n", path);
            tool_show_first_difference(text, printed, "line", "file:    ", "printed: ", 0);
        }
        free(printed);
        ir_graph_free(g);
    }
    diag_free(&d);
    free(text);
    return ok;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
    int bless = 0, passed = 0, failed = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--bless") == 0) {
            bless = 1;
            continue;
        }
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            DIR *dp = opendir(argv[i]);
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
                size_t plen = strlen(argv[i]) + nl + 2;
                names[n] = malloc(plen);
                snprintf(names[n], plen, "%s/%s", argv[i], e->d_name);
                n++;
            }
            if (dp) closedir(dp);
            qsort(names, n, sizeof *names, cmp_str); /* stable report order */
            for (size_t k = 0; k < n; k++) {
                if (check_file(names[k], bless)) passed++;
                else failed++;
                free(names[k]);
            }
            free(names);
        } else if (check_file(argv[i], bless)) {
            passed++;
        } else {
            failed++;
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
