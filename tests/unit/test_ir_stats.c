/* Unit tests of ir/stats.c: op histogram, parameter counts, MAC estimates (static and
 * symbolic), and the unsupported-op list with its extension hook. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "ir/stats.h"

/* A tensor value; dims < 0 are symbolic with the name in syms_names[i] (or unknown when
 * that is NULL). */
static uint32_t tensor(IrGraph *g, const char *name, int rank, const int64_t *dims,
                       const char *const *sym_names) {
    IrType t = ir_type_tensor(IR_DTYPE_F32, rank, dims);
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0 && sym_names && sym_names[i]) t.syms[i] = ir_graph_sym(g, sym_names[i]);
    return ir_value_add(g, name, &t, IR_VALUE_NODE);
}

/* A node of op with the given input and output values. */
static uint32_t node(IrGraph *g, IrOp op, const uint32_t *ins, uint32_t n_ins, const uint32_t *outs,
                     uint32_t n_outs) {
    uint32_t id = ir_node_add(g, op, "n", n_ins, n_outs, 0);
    IrNode *n = &g->nodes[id];
    for (uint32_t i = 0; i < n_ins; i++)
        n->inputs[i] = ins[i];
    for (uint32_t i = 0; i < n_outs; i++) {
        n->outputs[i] = outs[i];
        g->values[outs[i]].producer = id;
    }
    return id;
}

static uint32_t unknown_node(IrGraph *g, const char *domain, const char *op_type) {
    uint32_t id = ir_node_add(g, IR_OP_UNKNOWN, "u", 0, 0, 0);
    g->nodes[id].domain = domain;
    g->nodes[id].op_type = op_type;
    return id;
}

static int64_t node_macs(IrGraph *g, uint32_t id) {
    IrMacTerm t;
    int known = ir_node_macs(g, &g->nodes[id], &t);
    cr_assert_eq(known, 1, "MACs of %s not known", g->nodes[id].op_type);
    cr_assert_eq(t.n_syms, 0);
    return t.coeff;
}

Test(ir_stats, sorts_the_op_histogram_by_count_then_name) {
    IrGraph *g = ir_graph_new("t");
    ir_node_add(g, IR_OP_RELU, "a", 0, 0, 0);
    ir_node_add(g, IR_OP_CONV, "b", 0, 0, 0);
    ir_node_add(g, IR_OP_RELU, "c", 0, 0, 0);
    ir_node_add(g, IR_OP_ADD, "d", 0, 0, 0);
    ir_node_add(g, IR_OP_ADD, "e", 0, 0, 0);
    unknown_node(g, "com.example", "Foo");
    uint32_t dead = ir_node_add(g, IR_OP_SIGMOID, "f", 0, 0, 0);
    g->nodes[dead].dead = true;
    IrStats s;
    cr_assert(ir_stats_compute(g, NULL, NULL, &s));
    cr_assert_eq(s.n_nodes, 6);
    cr_assert_eq(s.n_ops, 4);
    const char *order[] = {"Add", "Relu", "Conv", "Foo"};
    const uint32_t counts[] = {2, 2, 1, 1};
    for (int i = 0; i < 4; i++) {
        cr_assert_str_eq(s.ops[i].op_type, order[i]);
        cr_assert_eq(s.ops[i].count, counts[i]);
    }
    cr_assert_str_eq(s.ops[3].domain, "com.example");
    ir_stats_free(&s);
    ir_graph_free(g);
}

Test(ir_stats, counts_initializers_and_constant_node_tensors_as_parameters) {
    IrGraph *g = ir_graph_new("t");
    int64_t wd[2] = {3, 4};
    uint32_t w = ir_value_add(g, "w", NULL, IR_VALUE_CONST);
    g->values[w].tensor = ir_tensor_new(g->arena, IR_DTYPE_F32, 2, wd);
    int64_t cd[1] = {2};
    uint32_t c1 = ir_node_add(g, IR_OP_CONSTANT, "c1", 0, 1, 0);
    IrAttr *a = ir_node_attr(&g->nodes[c1], IR_ATTR_CONSTANT_VALUE);
    a->present = true;
    a->n = 1;
    a->tensors = ir_tensor_new(g->arena, IR_DTYPE_I64, 1, cd);
    uint32_t c2 = ir_node_add(g, IR_OP_CONSTANT, "c2", 0, 1, 0);
    a = ir_node_attr(&g->nodes[c2], IR_ATTR_CONSTANT_VALUE_FLOATS);
    a->present = true;
    a->n = 3;
    IrStats s;
    cr_assert(ir_stats_compute(g, NULL, NULL, &s));
    cr_assert_eq(s.n_params, 12 + 2 + 3);
    cr_assert_eq(s.param_bytes, 48 + 16 + 12);
    cr_assert_eq(s.n_param_tensors, 3);
    ir_stats_free(&s);
    ir_graph_free(g);
}

Test(ir_stats, counts_conv_macs_as_output_size_times_weight_fan_in) {
    IrGraph *g = ir_graph_new("t");
    uint32_t x = tensor(g, "x", 4, (int64_t[]){1, 3, 8, 8}, NULL);
    uint32_t w = tensor(g, "w", 4, (int64_t[]){4, 3, 3, 3}, NULL);
    uint32_t y = tensor(g, "y", 4, (int64_t[]){1, 4, 8, 8}, NULL);
    uint32_t c = node(g, IR_OP_CONV, (uint32_t[]){x, w}, 2, &y, 1);
    cr_assert_eq(node_macs(g, c), 1 * 4 * 8 * 8 * 3 * 3 * 3);
    /* depthwise: group 4, weight (4, 1, 3, 3) */
    uint32_t x4 = tensor(g, "x4", 4, (int64_t[]){1, 4, 8, 8}, NULL);
    uint32_t wd = tensor(g, "wd", 4, (int64_t[]){4, 1, 3, 3}, NULL);
    uint32_t yd = tensor(g, "yd", 4, (int64_t[]){1, 4, 8, 8}, NULL);
    uint32_t d = node(g, IR_OP_CONV, (uint32_t[]){x4, wd}, 2, &yd, 1);
    cr_assert_eq(node_macs(g, d), 4 * 8 * 8 * 9);
    /* transposed: every input element scatters into (M/group)*k*k outputs */
    uint32_t wt = tensor(g, "wt", 4, (int64_t[]){4, 2, 3, 3}, NULL);
    uint32_t yt = tensor(g, "yt", 4, (int64_t[]){1, 2, 17, 17}, NULL);
    uint32_t t = node(g, IR_OP_CONV_TRANSPOSE, (uint32_t[]){x4, wt}, 2, &yt, 1);
    cr_assert_eq(node_macs(g, t), 4 * 8 * 8 * 2 * 9);
    ir_graph_free(g);
}

Test(ir_stats, counts_gemm_and_matmul_macs_with_the_reduced_dimension) {
    IrGraph *g = ir_graph_new("t");
    uint32_t a = tensor(g, "a", 2, (int64_t[]){5, 2}, NULL); /* transposed: K 5, M 2 */
    uint32_t b = tensor(g, "b", 2, (int64_t[]){5, 3}, NULL);
    uint32_t y = tensor(g, "y", 2, (int64_t[]){2, 3}, NULL);
    uint32_t gm = node(g, IR_OP_GEMM, (uint32_t[]){a, b}, 2, &y, 1);
    IrAttr *ta = ir_node_attr(&g->nodes[gm], IR_ATTR_GEMM_TRANS_A);
    ta->present = true;
    ta->i = 1;
    cr_assert_eq(node_macs(g, gm), 2 * 3 * 5);
    uint32_t p = tensor(g, "p", 3, (int64_t[]){2, 3, 4}, NULL);
    uint32_t q = tensor(g, "q", 2, (int64_t[]){4, 5}, NULL);
    uint32_t r = tensor(g, "r", 3, (int64_t[]){2, 3, 5}, NULL);
    uint32_t mm = node(g, IR_OP_MAT_MUL, (uint32_t[]){p, q}, 2, &r, 1);
    cr_assert_eq(node_macs(g, mm), 2 * 3 * 5 * 4);
    ir_graph_free(g);
}

Test(ir_stats, counts_recurrent_and_attention_macs) {
    IrGraph *g = ir_graph_new("t");
    /* LSTM: seq 7, batch 2, input 3, hidden 5: 4 gates */
    uint32_t x = tensor(g, "x", 3, (int64_t[]){7, 2, 3}, NULL);
    uint32_t w = tensor(g, "w", 3, (int64_t[]){1, 20, 3}, NULL);
    uint32_t r = tensor(g, "r", 3, (int64_t[]){1, 20, 5}, NULL);
    uint32_t h = tensor(g, "h", 4, (int64_t[]){7, 1, 2, 5}, NULL);
    uint32_t l = node(g, IR_OP_LSTM, (uint32_t[]){x, w, r}, 3, &h, 1);
    cr_assert_eq(node_macs(g, l), 7 * 2 * (20 * 3 + 20 * 5));
    /* Attention, 4-D: batch 1, 2 heads, 4 queries, 6 keys, head size 8 */
    uint32_t q = tensor(g, "q", 4, (int64_t[]){1, 2, 4, 8}, NULL);
    uint32_t k = tensor(g, "k", 4, (int64_t[]){1, 2, 6, 8}, NULL);
    uint32_t v = tensor(g, "v", 4, (int64_t[]){1, 2, 6, 8}, NULL);
    uint32_t y = tensor(g, "y", 4, (int64_t[]){1, 2, 4, 8}, NULL);
    uint32_t at = node(g, IR_OP_ATTENTION, (uint32_t[]){q, k, v}, 3, &y, 1);
    cr_assert_eq(node_macs(g, at), 2 * (1 * 2 * 4 * 6 * 8));
    ir_graph_free(g);
}

Test(ir_stats, keeps_symbolic_dims_as_factors_and_counts_unknown_nodes) {
    IrGraph *g = ir_graph_new("t");
    const char *batch[] = {"batch", NULL, NULL, NULL};
    uint32_t x = tensor(g, "x", 4, (int64_t[]){-1, 3, 8, 8}, batch);
    uint32_t w = tensor(g, "w", 4, (int64_t[]){4, 3, 3, 3}, NULL);
    uint32_t y = tensor(g, "y", 4, (int64_t[]){-1, 4, 8, 8}, batch);
    node(g, IR_OP_CONV, (uint32_t[]){x, w}, 2, &y, 1);
    uint32_t a = tensor(g, "a", 2, (int64_t[]){2, 5}, NULL);
    uint32_t b = tensor(g, "b", 2, (int64_t[]){5, 3}, NULL);
    uint32_t c = tensor(g, "c", 2, (int64_t[]){2, 3}, NULL);
    node(g, IR_OP_GEMM, (uint32_t[]){a, b}, 2, &c, 1);
    /* an output with an unknown (unnamed) dim: not estimated */
    uint32_t u = tensor(g, "u", 2, (int64_t[]){-1, 3}, NULL);
    node(g, IR_OP_MAT_MUL, (uint32_t[]){a, b}, 2, &u, 1);
    IrStats s;
    cr_assert(ir_stats_compute(g, NULL, NULL, &s));
    cr_assert_eq(s.macs.n_terms, 2);
    cr_assert_eq(s.macs.n_unknown_nodes, 1);
    cr_assert_eq(s.macs.terms[0].coeff, 4 * 8 * 8 * 27);
    cr_assert_eq(s.macs.terms[0].n_syms, 1);
    cr_assert_eq(s.macs.terms[1].coeff, 30);
    char *text = ir_macs_format(g, &s.macs);
    cr_assert_str_eq(text, "6912*batch + 30");
    free(text);
    ir_stats_free(&s);
    ir_graph_free(g);
}

Test(ir_stats, formats_powers_and_empty_sums) {
    IrGraph *g = ir_graph_new("t");
    uint32_t batch = ir_graph_sym(g, "batch");
    uint32_t seq = ir_graph_sym(g, "seq");
    IrMacTerm terms[1] = {{1, {batch, batch, seq}, 3}};
    IrMacs m = {terms, 1, 0};
    char *text = ir_macs_format(g, &m);
    cr_assert_str_eq(text, "batch^2*seq");
    free(text);
    IrMacs empty = {NULL, 0, 0};
    text = ir_macs_format(g, &empty);
    cr_assert_str_eq(text, "0");
    free(text);
    ir_graph_free(g);
}

/* Exporters name derived dims by expressions ("s0 + 1", "2*s1"): as factors they need
 * brackets; names like "x[2]" (an open input axis) and "a.b:0" do not. */
Test(ir_stats, brackets_symbols_that_are_expressions) {
    IrGraph *g = ir_graph_new("t");
    uint32_t a = ir_graph_sym(g, "s0 + 1"), b = ir_graph_sym(g, "2*s1");
    uint32_t c = ir_graph_sym(g, "x[2]"), e = ir_graph_sym(g, "in.put:0");
    IrMacTerm terms[2] = {{64, {a, b}, 2}, {3, {c, c, e}, 3}};
    IrMacs m = {terms, 2, 0};
    char *text = ir_macs_format(g, &m);
    cr_assert_str_eq(text, "64*(s0 + 1)*(2*s1) + 3*x[2]^2*in.put:0");
    free(text);
    ir_graph_free(g);
}

/* A formula past the old 511-character buffer comes out whole. */
Test(ir_stats, formats_long_formulas_whole) {
    IrGraph *g = ir_graph_new("t");
    IrMacTerm terms[40];
    char name[32];
    for (int i = 0; i < 40; i++) {
        snprintf(name, sizeof name, "dimension_number_%02d", i);
        terms[i] = (IrMacTerm){1000 + i, {ir_graph_sym(g, name)}, 1};
    }
    IrMacs m = {terms, 40, 0};
    char *text = ir_macs_format(g, &m);
    cr_assert(strlen(text) > 1000, "%zu characters", strlen(text));
    cr_assert(strstr(text, "1039*dimension_number_39") && !strstr(text, "..."), "%s", text);
    free(text);
    ir_graph_free(g);
}

static const char *no_relu_kernel(const IrGraph *g, const IrNode *n, void *ctx) {
    const char *why = ir_node_unsupported_reason(g, n, NULL);
    (*(int *)ctx)++;
    if (why) return why;
    return n->op == IR_OP_RELU ? "no kernel" : NULL;
}

Test(ir_stats, lists_unsupported_ops_by_domain_and_count_and_lets_backends_extend_it) {
    IrGraph *g = ir_graph_new("t");
    unknown_node(g, "com.example", "Foo");
    unknown_node(g, "com.example", "Foo");
    unknown_node(g, "com.other", "Foo");
    unknown_node(g, "", "Bar");
    ir_node_add(g, IR_OP_RELU, "r", 0, 0, 0);
    IrOpCount *u;
    uint32_t n;
    cr_assert(ir_stats_unsupported(g, NULL, NULL, &u, &n));
    cr_assert_eq(n, 3);
    cr_assert_str_eq(u[0].op_type, "Foo");
    cr_assert_str_eq(u[0].domain, "com.example");
    cr_assert_eq(u[0].count, 2);
    cr_assert_str_eq(u[1].op_type, "Bar");
    cr_assert_str_eq(u[2].domain, "com.other");
    cr_assert_str_eq(u[2].reason, "not in the op table");
    free(u);
    int calls = 0;
    cr_assert(ir_stats_unsupported(g, no_relu_kernel, &calls, &u, &n));
    cr_assert_eq(calls, 5);
    cr_assert_eq(n, 4);
    cr_assert_str_eq(u[3].op_type, "Relu");
    cr_assert_str_eq(u[3].reason, "no kernel");
    free(u);
    ir_graph_free(g);
}

Test(ir_stats, counts_subgraph_nodes_but_not_their_macs) {
    IrGraph *g = ir_graph_new("t");
    ir_node_add(g, IR_OP_LOOP, "loop", 0, 0, 0);
    uint32_t sub = ir_graph_add_subgraph(g, "body");
    IrGraph *body = g->subgraphs[sub];
    uint32_t a = tensor(body, "a", 2, (int64_t[]){2, 5}, NULL);
    uint32_t b = tensor(body, "b", 2, (int64_t[]){5, 3}, NULL);
    uint32_t c = tensor(body, "c", 2, (int64_t[]){2, 3}, NULL);
    node(body, IR_OP_MAT_MUL, (uint32_t[]){a, b}, 2, &c, 1);
    IrStats s;
    cr_assert(ir_stats_compute(g, NULL, NULL, &s));
    cr_assert_eq(s.n_nodes, 2);
    cr_assert_eq(s.macs.n_terms, 0);
    cr_assert_eq(s.macs.n_unknown_nodes, 1);
    ir_stats_free(&s);
    ir_graph_free(g);
}
