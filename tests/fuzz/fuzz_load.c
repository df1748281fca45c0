/* libFuzzer target for the ONNX loader: decodes the input as a ModelProto with shape
 * inference on, verifies the graph, prints it in the text form and parses that back, so the
 * loader, shape inference, verifier, printer and parser all see hostile graphs. Every path
 * frees what it allocated (leaks are findings too). With KILN_FUZZ_ROUNDTRIP=1 in the
 * environment, a graph that parses back must print identically (a printer/parser mismatch
 * then traps). Built by tests/CMakeLists.txt when KILN_FUZZ=ON; run by scripts/test. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx.h"
#include "ir/ir.h"

/* Tensors are printed in full (so the text parses back) only while the graph's data stays
 * below this; larger graphs (densified sparse tensors) print elided to keep runs fast. */
#define FUZZ_FULL_DATA_MAX_BYTES (1u << 20)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool g_check_roundtrip;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *rt = getenv("KILN_FUZZ_ROUNDTRIP");
    g_check_roundtrip = rt && strcmp(rt, "1") == 0;
    return 0;
}

static size_t attr_data_bytes(const IrAttr *a) {
    bool has_tensors = a->kind == IR_ATTR_KIND_TENSOR || a->kind == IR_ATTR_KIND_TENSORS ||
                       a->kind == IR_ATTR_KIND_SPARSE_TENSOR ||
                       a->kind == IR_ATTR_KIND_SPARSE_TENSORS;
    size_t total = 0;
    if (has_tensors && a->tensors) {
        for (uint32_t i = 0; i < a->n; i++) total += a->tensors[i].size_bytes;
    }
    return total;
}

/* Bytes of tensor data held by g and its subgraphs (initializers and tensor attributes). */
static size_t graph_data_bytes(const IrGraph *g) {
    size_t total = 0;
    for (uint32_t v = 0; v < g->n_values; v++) {
        if (g->values[v].tensor) total += g->values[v].tensor->size_bytes;
    }
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        for (uint32_t k = 0; k < n->n_attrs; k++) total += attr_data_bytes(&n->attrs[k]);
    }
    for (uint32_t s = 0; s < g->n_subgraphs; s++) total += graph_data_bytes(g->subgraphs[s]);
    return total;
}

static char *print_graph(const IrGraph *g, bool full_data, size_t *len) {
    char *text = NULL;
    *len = 0;
    FILE *f = open_memstream(&text, len);
    if (!f) return NULL;
    IrPrintOpts opts = {.full_data = full_data};
    ir_print(f, g, &opts);
    fclose(f);
    return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    OnnxLoadOptions opts = {.dims = NULL, .n_dims = 0, .infer_shapes = true};
    Diag diag;
    diag_init(&diag);
    IrGraph *g = onnx_load_buffer(data, size, NULL, &opts, &diag);
    diag_free(&diag);
    if (!g) return 0;

    diag_init(&diag);
    (void)ir_verify(g, &diag);
    diag_free(&diag);

    bool full_data = graph_data_bytes(g) <= FUZZ_FULL_DATA_MAX_BYTES;
    size_t len = 0;
    char *text = print_graph(g, full_data, &len);
    if (text) {
        diag_init(&diag);
        IrGraph *back = ir_parse(text, len, &diag);
        diag_free(&diag);
        if (back && g_check_roundtrip && full_data) {
            size_t len2 = 0;
            char *text2 = print_graph(back, true, &len2);
            if (text2 && (len2 != len || memcmp(text, text2, len) != 0)) {
                fprintf(stderr, "fuzz_load: text form does not round-trip\n");
                __builtin_trap();
            }
            free(text2);
        }
        if (back) ir_graph_free(back);
        free(text);
    }
    ir_graph_free(g);
    return 0;
}
