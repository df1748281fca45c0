/* Unit tests of ir/graph.c, ir/arena.c and ir/optable.c. */
#include <criterion/criterion.h>
#include <string.h>

#include "ir/ir.h"

Test(ir_optable, finds_conv_in_the_default_domain_under_both_names) {
    cr_assert_eq(ir_op_lookup("", "Conv"), IR_OP_CONV);
    cr_assert_eq(ir_op_lookup("ai.onnx", "Conv"), IR_OP_CONV);
    cr_assert_eq(ir_op_lookup("com.example", "Conv"), IR_OP_UNKNOWN);
    cr_assert_str_eq(ir_op_name(IR_OP_CONV), "Conv");
}

Test(ir_optable, gives_attribute_defaults_from_the_schema) {
    IrGraph *g = ir_graph_new("t");
    uint32_t n = ir_node_add(g, IR_OP_CONV, "c", 2, 1, 0);
    IrNode *node = &g->nodes[n];
    cr_assert_eq(ir_attr_i(node, IR_ATTR_CONV_GROUP), 1);
    cr_assert_str_eq(ir_attr_s(node, IR_ATTR_CONV_AUTO_PAD), "NOTSET");
    IrAttr *a = ir_node_attr(node, IR_ATTR_CONV_GROUP);
    a->present = true;
    a->i = 4;
    cr_assert_eq(ir_attr_i(node, IR_ATTR_CONV_GROUP), 4);
    cr_assert_eq(ir_attr_lookup(IR_OP_CONV, "group"), (uint32_t)IR_ATTR_CONV_GROUP);
    cr_assert_eq(ir_attr_lookup(IR_OP_CONV, "nope"), IR_NONE);
    ir_graph_free(g);
}

Test(ir_optable, flags_answer_through_a_function) {
    cr_assert(ir_op_has(IR_OP_RELU, OPF_ACT | OPF_ELTWISE));
    cr_assert(!ir_op_has(IR_OP_CONV, OPF_ELTWISE));
    cr_assert(ir_op_has(IR_OP_IF, OPF_SUBGRAPH));
}

Test(ir_graph, interns_symbols_in_the_root) {
    IrGraph *g = ir_graph_new("t");
    uint32_t sub = ir_graph_add_subgraph(g, "body");
    uint32_t a = ir_graph_sym(g, "batch");
    uint32_t b = ir_graph_sym(g->subgraphs[sub], "batch");
    cr_assert_eq(a, b);
    cr_assert_str_eq(ir_graph_sym_name(g->subgraphs[sub], a), "batch");
    ir_graph_free(g);
}

Test(ir_graph, keeps_value_ids_stable_while_growing) {
    IrGraph *g = ir_graph_new("t");
    IrType t = ir_type_tensor(IR_DTYPE_F32, 1, (int64_t[]){3});
    for (int i = 0; i < 1000; i++) {
        char name[16];
        snprintf(name, sizeof name, "v%d", i);
        cr_assert_eq(ir_value_add(g, name, &t, IR_VALUE_INPUT), (uint32_t)i);
    }
    cr_assert_str_eq(g->values[777].name, "v777");
    cr_assert_eq(ir_type_numel(&g->values[5].type), 3);
    ir_graph_free(g);
}

Test(ir_graph, compaction_drops_dead_nodes_and_remaps_producers) {
    IrGraph *g = ir_graph_new("t");
    uint32_t n0 = ir_node_add(g, IR_OP_RELU, "a", 1, 1, 0);
    uint32_t n1 = ir_node_add(g, IR_OP_RELU, "b", 1, 1, 0);
    uint32_t v = ir_value_add(g, "y", NULL, IR_VALUE_NODE);
    g->values[v].producer = n1;
    g->nodes[n0].dead = true;
    ir_graph_compact(g);
    cr_assert_eq(g->n_nodes, 1);
    cr_assert_eq(g->values[v].producer, 0);
    cr_assert_str_eq(g->nodes[0].name, "b");
    ir_graph_free(g);
}

Test(ir_dtype, sizes_sub_byte_types_packed) {
    cr_assert_eq(ir_dtype_size_bytes(IR_DTYPE_I4, 3), 2);
    cr_assert_eq(ir_dtype_size_bytes(IR_DTYPE_F32, 3), 12);
    cr_assert_eq(ir_dtype_size_bytes(IR_DTYPE_STRING, 3), 0);
    IrDType t;
    cr_assert(ir_dtype_from_name("bf16", &t));
    cr_assert_eq(t, IR_DTYPE_BF16);
}
