/* shapecheck: checks shape inference against the types models declare. For each model
 * given (or listed one per line on stdin with "-"): load it, forget the declared types of
 * the graph outputs, run ir_infer_shapes, and compare what it infers with what was
 * declared: exact, less known (no conflict) or conflicting. Ends with a histogram of the
 * ops behind less-known outputs and "N passed, N failed" (failed: a conflict or an error).
 * The verifier runs on each model first. -v prints every less-known output; --typed also
 * verifies that every used value has a type after inference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx.h"
#include "ir/shape.h"

#define SHAPECHECK_MAX_LINE 4096 /* longest path accepted on stdin */
#define SHAPECHECK_MAX_OUTPUTS 256

typedef struct OpCount {
    const char *op;
    unsigned n;
} OpCount;

/* Outputs of ops whose size depends on data (NonZero, Compress, Unique, NonMaxSuppression)
 * are inferred as an upper bound when nothing is declared: a declared size at most the bound
 * is consistent with it. */
static bool within_upper_bound(const IrGraph *g, const IrValue *v, const IrType *declared) {
    if (v->kind != IR_VALUE_NODE || v->producer == IR_NONE) return false;
    IrOp op = (IrOp)g->nodes[v->producer].op;
    if (op != IR_OP_NON_ZERO && op != IR_OP_COMPRESS && op != IR_OP_UNIQUE &&
        op != IR_OP_NON_MAX_SUPPRESSION)
        return false;
    if (v->type.dtype != declared->dtype || v->type.rank != declared->rank) return false;
    for (int k = 0; k < v->type.rank; k++)
        if (declared->dims[k] >= 0 && v->type.dims[k] >= 0 && declared->dims[k] > v->type.dims[k])
            return false;
    return true;
}

static unsigned n_exact, n_less, n_conflict, n_passed, n_failed;
static OpCount less_ops[IR_OP_COUNT + 1];
static unsigned n_less_ops;
static bool verbose, typed;
static unsigned n_unverified, n_untyped;

static bool deep_equal(const IrType *a, const IrType *b) {
    if (a->kind != b->kind) return false;
    if (a->kind == IR_TYPE_SEQUENCE || a->kind == IR_TYPE_OPTIONAL) {
        if (!a->elem || !b->elem) return a->elem == b->elem;
        return deep_equal(a->elem, b->elem);
    }
    if (a->kind != IR_TYPE_TENSOR && a->kind != IR_TYPE_SPARSE_TENSOR) return true;
    if (a->dtype != b->dtype || a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++) {
        if (a->dims[i] != b->dims[i]) return false;
        if (a->dims[i] < 0 && a->syms[i] != b->syms[i]) return false;
    }
    return true;
}

static void count_less(const char *op) {
    for (unsigned i = 0; i < n_less_ops; i++)
        if (strcmp(less_ops[i].op, op) == 0) {
            less_ops[i].n++;
            return;
        }
    if (n_less_ops < IR_OP_COUNT + 1) less_ops[n_less_ops++] = (OpCount){op, 1};
}

static void check_one(const char *path) {
    Diag d;
    diag_init(&d);
    OnnxLoadOptions opts = {.infer_shapes = false};
    IrGraph *g = onnx_load_file(path, &opts, &d);
    if (!g) {
        printf("FAIL %s: does not load\n", path);
        diag_print(&d, stdout, path);
        diag_free(&d);
        n_failed++;
        return;
    }
    uint32_t n_out = g->n_outputs < SHAPECHECK_MAX_OUTPUTS ? g->n_outputs : SHAPECHECK_MAX_OUTPUTS;
    IrType declared[SHAPECHECK_MAX_OUTPUTS];
    for (uint32_t i = 0; i < n_out; i++) {
        IrValue *v = &g->values[g->outputs[i]];
        declared[i] = v->type;
        if (v->kind == IR_VALUE_NODE) v->type = shape_unknown();
    }
    bool ok = ir_verify(g, &d);
    if (!ok) n_unverified++;
    ok = ir_infer_shapes(g, &d) && ok;
    if (typed) {
        IrVerifyOpts vo = {true};
        if (!ir_verify_opts(g, &vo, &d)) n_untyped++;
    }
    bool failed = !ok || diag_has_errors(&d);
    for (uint32_t i = 0; i < n_out; i++) {
        const IrValue *v = &g->values[g->outputs[i]];
        char a[256], b[256];
        IrType merged = v->type;
        if (deep_equal(&v->type, &declared[i])) {
            n_exact++;
        } else if (ir_shape_merge(g->arena, &merged, &declared[i]) ||
                   within_upper_bound(g, v, &declared[i])) {
            n_less++;
            const char *op = v->kind == IR_VALUE_NODE && v->producer != IR_NONE
                                 ? g->nodes[v->producer].op_type
                                 : "(not a node)";
            count_less(op);
            if (verbose)
                printf("LESS %s: output '%s' (%s): inferred %s, declared %s\n", path, v->name,
                       op, ir_shape_type_str(g, &v->type, a, sizeof a),
                       ir_shape_type_str(g, &declared[i], b, sizeof b));
        } else {
            n_conflict++;
            failed = true;
            printf("CONFLICT %s: output '%s': inferred %s, declared %s\n", path, v->name,
                   ir_shape_type_str(g, &v->type, a, sizeof a),
                   ir_shape_type_str(g, &declared[i], b, sizeof b));
        }
    }
    if (failed) {
        printf("FAIL %s\n", path);
        diag_print(&d, stdout, path);
        n_failed++;
    } else {
        n_passed++;
    }
    diag_free(&d);
    ir_graph_free(g);
}

static int by_count(const void *pa, const void *pb) {
    const OpCount *a = pa, *b = pb;
    return (int)b->n - (int)a->n;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0) {
            verbose = true;
        } else if (strcmp(argv[i], "--typed") == 0) {
            typed = true;
        } else if (strcmp(argv[i], "-") == 0) {
            char line[SHAPECHECK_MAX_LINE];
            while (fgets(line, sizeof line, stdin)) {
                line[strcspn(line, "\r\n")] = '\0';
                if (line[0]) check_one(line);
            }
        } else {
            check_one(argv[i]);
        }
    }
    qsort(less_ops, n_less_ops, sizeof less_ops[0], by_count);
    printf("outputs: %u exact, %u less known, %u conflicting\n", n_exact, n_less, n_conflict);
    if (n_less_ops) {
        printf("less known by producing op:");
        for (unsigned i = 0; i < n_less_ops; i++) printf(" %s:%u", less_ops[i].op, less_ops[i].n);
        printf("\n");
    }
    printf("models failing ir_verify: %u", n_unverified);
    if (typed) printf(", with untyped values after inference: %u", n_untyped);
    printf("\n%u passed, %u failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
