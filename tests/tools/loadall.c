/* loadall: loads every model given on the command line (or listed one per line on stdin
 * with "-") through the ONNX frontend, prints each failure with its diagnostics, and ends
 * with "N passed, N failed". Exit status 1 when any model failed. Used to check that the
 * ONNX node tests all load, under the sanitizers too. */
#include <stdio.h>
#include <string.h>

#include "frontend/onnx.h"

#define LOADALL_MAX_LINE 4096 /* longest path accepted on stdin */

typedef struct Stats {
    unsigned long nodes, unknown_ops, attrs, subgraphs, outer_values;
} Stats;

/* A light consistency check of what the loader built (the verifier proper lives in ir/):
 * ids in range, producers pointing back, subgraph indices valid. Counts go to st. */
static const char *check_graph(const IrGraph *g, Stats *st) {
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        st->nodes++;
        if (n->op == IR_OP_UNKNOWN) st->unknown_ops++;
        for (uint32_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] != IR_NONE && n->inputs[k] >= g->n_values) return "input id";
        for (uint32_t k = 0; k < n->n_outputs; k++) {
            uint32_t v = n->outputs[k];
            if (v == IR_NONE) continue;
            if (v >= g->n_values || g->values[v].producer != i) return "output producer";
        }
        for (uint32_t k = 0; k < n->n_attrs; k++) {
            const IrAttr *a = &n->attrs[k];
            if (!a->present) continue;
            st->attrs++;
            if (a->kind == IR_ATTR_KIND_GRAPH || a->kind == IR_ATTR_KIND_GRAPHS)
                for (uint32_t j = 0; j < a->n; j++)
                    if (a->graphs[j] >= g->n_subgraphs) return "subgraph index";
        }
    }
    for (uint32_t v = 0; v < g->n_values; v++) {
        const IrValue *val = &g->values[v];
        if (val->kind == IR_VALUE_OUTER) {
            st->outer_values++;
            if (!g->parent || val->producer >= g->parent->n_values) return "outer value";
        }
    }
    for (uint32_t i = 0; i < g->n_subgraphs; i++) {
        st->subgraphs++;
        const char *err = check_graph(g->subgraphs[i], st);
        if (err) return err;
    }
    return NULL;
}

static Stats stats;

static void load_one(const char *path, unsigned *passed, unsigned *failed) {
    Diag d;
    diag_init(&d);
    OnnxLoadOptions opts = {.infer_shapes = false};
    IrGraph *g = onnx_load_file(path, &opts, &d);
    const char *bad = g ? check_graph(g, &stats) : NULL;
    if (g && !diag_has_errors(&d) && !bad) {
        (*passed)++;
    } else {
        (*failed)++;
        printf("FAIL %s%s%s\n", path, bad ? ": inconsistent graph: " : "", bad ? bad : "");
        diag_print(&d, stderr, path); /* "error:" lines go to stderr, as for kiln */
    }
    ir_graph_free(g);
    diag_free(&d);
}

int main(int argc, char **argv) {
    unsigned passed = 0, failed = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-") != 0) {
            load_one(argv[i], &passed, &failed);
            continue;
        }
        char line[LOADALL_MAX_LINE];
        while (fgets(line, sizeof line, stdin)) {
            line[strcspn(line, "\r\n")] = 0;
            if (line[0]) load_one(line, &passed, &failed);
        }
    }
    fprintf(stderr,
            "loaded %lu nodes (%lu of unknown ops), %lu attributes, %lu subgraphs, "
            "%lu outer values\n",
            stats.nodes, stats.unknown_ops, stats.attrs, stats.subgraphs, stats.outer_values);
    printf("%u passed, %u failed\n", passed, failed);
    return failed ? 1 : 0;
}
