/* Unit tests of passes/debug_outputs.c: the graph variant of kiln validate --per-node in
 * which every node result with a static numeric type is also a graph output. */
#include <criterion/criterion.h>
#include <string.h>

#include "passes/debug_outputs.h"

static IrGraph *parse(const char *text) {
    Diag d;
    diag_init(&d);
    IrGraph *g = ir_parse(text, strlen(text), &d);
    cr_assert_not_null(g, "the test graph does not parse");
    diag_free(&d);
    return g;
}

static const char *output_name(const IrGraph *g, uint32_t i) {
    return g->values[g->outputs[i]].name;
}

Test(debug_outputs, exposes_every_node_result_in_graph_order_once) {
    IrGraph *g = parse("kiln-ir 1\n"
                       "model ir_version=8\n"
                       "opset \"\"=17\n"
                       "graph g {\n"
                       "  input %x : f32[8]\n"
                       "  const %w : f32[1] = hex\"0000803f\"\n"
                       "  %a : f32[8] = Mul(%x, %w)\n"
                       "  %b : f32[8] = Relu(%a)\n"
                       "  %c : i32[8] = Cast(%b) {to=6}\n"
                       "  %e : f32[8] = Sigmoid(%b)\n"
                       "  output %e\n"
                       "  output %c\n"
                       "}\n");
    uint32_t added = pass_expose_intermediates(g);
    cr_assert_eq(added, 2, "added %u outputs, wanted a and b", added);
    cr_assert_eq(g->n_outputs, 4);
    cr_assert_str_eq(output_name(g, 0), "e");
    cr_assert_str_eq(output_name(g, 1), "c");
    cr_assert_str_eq(output_name(g, 2), "a");
    cr_assert_str_eq(output_name(g, 3), "b");
    cr_assert_eq(pass_expose_intermediates(g), 0, "a second call adds nothing");
    ir_graph_free(g);
}

Test(debug_outputs, skips_values_without_a_static_numeric_type) {
    IrGraph *g = parse("kiln-ir 1\n"
                       "model ir_version=8\n"
                       "opset \"\"=17\n"
                       "graph g {\n"
                       "  input %x : f32[n,4]\n"
                       "  %a : f32[n,4] = Relu(%x)\n"
                       "  %b : f32[n,4] = Neg(%a)\n"
                       "  output %b\n"
                       "}\n");
    cr_assert_eq(pass_expose_intermediates(g), 0);
    cr_assert_eq(g->n_outputs, 1);
    cr_assert_not(pass_value_exposable(g, g->inputs[0]));
    cr_assert_not(pass_value_exposable(g, IR_NONE));
    ir_graph_free(g);
}
