/* The golden support table: docs/ops.md is what backend_support_table writes, so a change to
 * which ops a target runs natively shows in review as a change to that file. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/target.h"

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

/* The first line where a and b differ, 1-based (0 when equal). */
static int first_diff_line(const char *a, const char *b) {
    int line = 1;
    for (; *a && *a == *b; a++, b++)
        if (*a == '\n') line++;
    return *a == *b ? 0 : line;
}

Test(backend_support, docs_ops_md_lists_what_each_target_runs_as_the_code_says) {
    char *table = backend_support_table();
    cr_assert_not_null(table);
    char *doc = read_text(KILN_SOURCE_DIR "/docs/ops.md");
    cr_assert_not_null(doc, "docs/ops.md is missing: build/tests/support_table > docs/ops.md");
    int line = first_diff_line(table, doc);
    cr_expect_eq(line, 0, "docs/ops.md differs from the backends from line %d on: "
                          "regenerate it with build/tests/support_table > docs/ops.md", line);
    free(doc);
    free(table);
}

Test(backend_support, every_target_runs_conv_natively_and_refuses_an_unknown_op) {
    const char *names[] = {"c", "cuda"};
    for (size_t i = 0; i < 2; i++) {
        const BackendTarget *t = backend_target(names[i]);
        cr_assert_not_null(t, "target %s", names[i]);
        cr_expect(t->op_native(IR_OP_CONV), "%s runs Conv natively", names[i]);
        cr_expect(t->op_compiles(IR_OP_CONV), "%s compiles Conv", names[i]);
        cr_expect(!t->op_compiles(IR_OP_UNKNOWN), "%s refuses IR_OP_UNKNOWN", names[i]);
    }
}

Test(backend_support, a_native_op_is_one_that_compiles_and_cuda_has_a_fallback) {
    const BackendTarget *c = backend_target("c"), *cuda = backend_target("cuda");
    uint32_t fallback = 0;
    for (int op = 1; op < IR_OP_COUNT; op++) {
        cr_expect(!c->op_native((IrOp)op) || c->op_compiles((IrOp)op), "c: %s",
                  ir_op_name((IrOp)op));
        cr_expect(!cuda->op_native((IrOp)op) || cuda->op_compiles((IrOp)op), "cuda: %s",
                  ir_op_name((IrOp)op));
        fallback += cuda->op_compiles((IrOp)op) && !cuda->op_native((IrOp)op);
    }
    cr_expect_gt(fallback, 0, "some ops reach CUDA through the generic path");
}
