/* roundtrip: checks print(parse(print(G))) == print(G) for ONNX models loaded by the frontend.
 *   roundtrip [--no-infer] MODEL.onnx...     or     roundtrip [--no-infer] - < list-of-paths
 * Each model is loaded (with shape inference, as kiln does, unless --no-infer), printed with
 * full data, parsed back and printed again; a mismatch reports the first differing line. A
 * parsed graph must also pass ir_verify when the loaded one does. Models the loader refuses
 * are counted as skipped. Ends with "N passed, N failed, N skipped"; exit status 1 when any
 * failed. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx.h"
#include "ir/ir.h"
#include "tool_text.h"

#define LINE_SHOW_CHARS 200 /* long hex lines are cut in reports */


typedef enum Outcome { PASSED, FAILED, SKIPPED } Outcome;

static Outcome check_model(const char *path, bool infer) {
    Diag d;
    diag_init(&d);
    OnnxLoadOptions lo;
    memset(&lo, 0, sizeof lo);
    lo.infer_shapes = infer;
    IrGraph *g = onnx_load_file(path, &lo, &d);
    if (!g) {
        printf("SKIP %s: the loader refused it\n", path);
        diag_free(&d);
        return SKIPPED;
    }
    IrPrintOpts full = {true};
    char *first = ir_print_to_string(g, &full);
    Diag pd;
    diag_init(&pd);
    IrGraph *g2 = ir_parse(first, strlen(first), &pd);
    Outcome r = FAILED;
    if (!g2) {
        printf("FAIL %s: the printed text does not parse\n", path);
        diag_print(&pd, stdout, path);
        /* show the offending line */
        if (pd.n_msgs) {
            unsigned line = (unsigned)strtoul(pd.msgs[0].text, NULL, 10);
            const char *p = first;
            for (unsigned i = 1; i < line && p; i++) {
                p = strchr(p, '\n');
                if (p) p++;
            }
            if (p) printf("  line %u: %.*s\n", line, (int)strcspn(p, "\n") > LINE_SHOW_CHARS
                          ? LINE_SHOW_CHARS : (int)strcspn(p, "\n"), p);
        }
    } else {
        char *second = ir_print_to_string(g2, &full);
        Diag vd;
        diag_init(&vd);
        bool loaded_ok = ir_verify(g, &vd);
        diag_free(&vd);
        diag_init(&vd);
        if (loaded_ok && !ir_verify(g2, &vd)) {
            printf("FAIL %s: the loaded graph verifies, the parsed one does not\n", path);
            diag_print(&vd, stdout, path);
        } else if (strcmp(first, second) == 0) {
            r = PASSED;
        } else {
            printf("FAIL %s: the second print differs\n", path);
            tool_show_first_difference(first, second, "line", "first:  ", "second: ", LINE_SHOW_CHARS);
        }
        diag_free(&vd);
        free(second);
        ir_graph_free(g2);
    }
    diag_free(&pd);
    free(first);
    ir_graph_free(g);
    diag_free(&d);
    return r;
}

int main(int argc, char **argv) {
    int counts[3] = {0, 0, 0};
    bool infer = true;
    int first = 1;
    if (first < argc && strcmp(argv[first], "--no-infer") == 0) {
        infer = false;
        first++;
    }
    if (argc == first + 1 && strcmp(argv[first], "-") == 0) {
        char line[4096];
        while (fgets(line, sizeof line, stdin)) {
            line[strcspn(line, "\r\n")] = 0;
            if (line[0]) counts[check_model(line, infer)]++;
        }
    } else {
        for (int i = first; i < argc; i++) counts[check_model(argv[i], infer)]++;
    }
    printf("%d passed, %d failed, %d skipped\n", counts[PASSED], counts[FAILED], counts[SKIPPED]);
    return counts[FAILED] ? 1 : 0;
}
