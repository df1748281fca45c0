/* Unit tests of passes/lower_sequences.c: binding sequence and optional graph inputs to
 * per-element tensor inputs (--seq specs), If branches that build sequences of one length,
 * and the refusals (runtime positions, runtime trip counts, branches of different lengths,
 * inputs of unknown length), each naming the node. The rewrites themselves are golden
 * tests in tests/golden/passes/lower_sequences_*.ir. */
#include <criterion/criterion.h>
#include <string.h>

#include "ir/ir.h"
#include "passes/passes.h"

static IrGraph *parse(const char *text) {
    Diag d;
    diag_init(&d);
    IrGraph *g = ir_parse(text, strlen(text), &d);
    if (diag_has_errors(&d)) diag_print(&d, stderr, "test");
    cr_assert(g && !diag_has_errors(&d), "the test graph parses");
    diag_free(&d);
    return g;
}

/* Runs binding (specs) and the pass; returns whether both succeeded, with the first error
 * message in *first (malloc'd, or NULL). */
static bool lower(IrGraph *g, const char *const *specs, unsigned n_specs, char **first) {
    Diag d;
    diag_init(&d);
    bool ok = pass_bind_seq_inputs(g, specs, n_specs, &d);
    if (ok) pass_lower_sequences(g, &d);
    ok = !diag_has_errors(&d);
    *first = NULL;
    if (d.n_msgs) *first = strdup(d.msgs[0].text);
    diag_free(&d);
    return ok;
}

/* ir_verify on the graph as its text form has it (as the golden pass tests do): values a
 * pass left without producer or reader are not part of the text. */
static void assert_verifies(const IrGraph *g) {
    char *text = ir_print_to_string(g, &(IrPrintOpts){.full_data = true});
    Diag d;
    diag_init(&d);
    IrGraph *h = ir_parse(text, strlen(text), &d);
    cr_assert(h && !diag_has_errors(&d), "the lowered graph parses back:\n%s", text);
    bool ok = ir_verify(h, &d);
    if (!ok) diag_print(&d, stderr, "verify");
    cr_assert(ok, "the lowered graph verifies:\n%s", text);
    diag_free(&d);
    ir_graph_free(h);
    free(text);
}

static uint32_t input_named(const IrGraph *g, const char *name) {
    for (uint32_t i = 0; i < g->n_inputs; i++)
        if (strcmp(g->values[g->inputs[i]].name, name) == 0) return g->inputs[i];
    return IR_NONE;
}

static const char seq_identity[] = "kiln-ir 1\n"
                                   "opset \"\"=17\n"
                                   "graph g {\n"
                                   "  input %w : f32[1]\n"
                                   "  input %x : seq<f32[?]>\n"
                                   "  %y : seq<f32[?]> = Identity(%x) name=copy\n"
                                   "  output %y\n"
                                   "}\n";

Test(lower_sequences, binds_a_sequence_input_to_one_tensor_input_per_element) {
    IrGraph *g = parse(seq_identity);
    const char *specs[] = {"x=[2][3,4]"};
    char *err;
    cr_assert(lower(g, specs, 1, &err), "lowered: %s", err ? err : "");
    cr_assert_eq(g->n_inputs, 3);
    cr_assert_str_eq(g->values[g->inputs[0]].name, "w");
    uint32_t x0 = input_named(g, "x_0"), x1 = input_named(g, "x_1");
    cr_assert(x0 != IR_NONE && x1 != IR_NONE);
    cr_assert_eq(g->values[x0].type.rank, 1);
    cr_assert_eq(g->values[x0].type.dims[0], 2);
    cr_assert_eq(g->values[x1].type.rank, 2);
    cr_assert_eq(g->values[x1].type.dims[1], 4);
    cr_assert_eq(g->n_outputs, 2);
    cr_assert_str_eq(g->values[g->outputs[0]].name, "y_0");
    cr_assert_str_eq(g->values[g->outputs[1]].name, "y_1");
    cr_assert_eq(g->values[g->outputs[1]].type.kind, IR_TYPE_TENSOR);
    cr_assert_eq(g->values[g->outputs[1]].type.dims[0], 3);
    assert_verifies(g);
    free(err);
    ir_graph_free(g);
}

Test(lower_sequences, refuses_a_sequence_input_of_unknown_length) {
    IrGraph *g = parse(seq_identity);
    char *err;
    cr_assert_not(lower(g, NULL, 0, &err));
    cr_assert(err && strstr(err, "'x'") && strstr(err, "--seq"), "got: %s", err ? err : "");
    free(err);
    ir_graph_free(g);
}

Test(lower_sequences, rejects_a_malformed_spec) {
    IrGraph *g = parse(seq_identity);
    const char *specs[] = {"x=[2,a]"};
    char *err;
    cr_assert_not(lower(g, specs, 1, &err));
    cr_assert(err && strstr(err, "--seq x="), "got: %s", err ? err : "");
    free(err);
    ir_graph_free(g);
}

Test(lower_sequences, rejects_a_spec_for_a_tensor_input) {
    IrGraph *g = parse(seq_identity);
    const char *specs[] = {"w=[1]"};
    char *err;
    cr_assert_not(lower(g, specs, 1, &err));
    free(err);
    ir_graph_free(g);
}

static const char opt_has[] = "kiln-ir 1\n"
                              "opset \"\"=18\n"
                              "graph g {\n"
                              "  input %o : opt<i32[3]>\n"
                              "  %has : bool[] = OptionalHasElement(%o) name=has\n"
                              "  output %has\n"
                              "}\n";

static bool const_bool(const IrGraph *g, uint32_t v) {
    cr_assert_eq(g->values[v].kind, IR_VALUE_CONST);
    return ((const uint8_t *)g->values[v].tensor->data)[0] != 0;
}

Test(lower_sequences, an_absent_optional_input_disappears_and_has_no_element) {
    IrGraph *g = parse(opt_has);
    const char *specs[] = {"o=none"};
    char *err;
    cr_assert(lower(g, specs, 1, &err), "lowered: %s", err ? err : "");
    cr_assert_eq(g->n_inputs, 0);
    cr_assert_not(const_bool(g, g->outputs[0]));
    free(err);
    ir_graph_free(g);
}

Test(lower_sequences, an_optional_tensor_input_is_present_by_default) {
    IrGraph *g = parse(opt_has);
    char *err;
    cr_assert(lower(g, NULL, 0, &err), "lowered: %s", err ? err : "");
    cr_assert_eq(g->n_inputs, 1);
    cr_assert_str_eq(g->values[g->inputs[0]].name, "o");
    cr_assert_eq(g->values[g->inputs[0]].type.kind, IR_TYPE_TENSOR);
    cr_assert(const_bool(g, g->outputs[0]));
    free(err);
    ir_graph_free(g);
}

Test(lower_sequences, refuses_an_insertion_at_a_position_known_only_at_run_time) {
    IrGraph *g = parse("kiln-ir 1\n"
                       "opset \"\"=17\n"
                       "graph g {\n"
                       "  input %a : f32[2]\n"
                       "  input %p : i64[]\n"
                       "  %s : seq<f32[2]> = SequenceConstruct(%a, %a) name=make\n"
                       "  %t : seq<f32[2]> = SequenceInsert(%s, %a, %p) name=put\n"
                       "  %n : i64[] = SequenceLength(%t) name=count\n"
                       "  output %n\n"
                       "}\n");
    char *err;
    cr_assert_not(lower(g, NULL, 0, &err));
    cr_assert(err && strstr(err, "'put'") && strstr(err, "SequenceInsert") &&
                  strstr(err, "position"), "got: %s", err ? err : "");
    free(err);
    ir_graph_free(g);
}

Test(lower_sequences, refuses_a_loop_over_a_sequence_with_a_run_time_trip_count) {
    IrGraph *g = parse("kiln-ir 1\n"
                       "opset \"\"=13\n"
                       "graph g {\n"
                       "  input %m : i64[]\n"
                       "  input %x : f32[2]\n"
                       "  %e : seq<f32[2]> = SequenceEmpty() name=empty {dtype=1}\n"
                       "  %r : seq<f32[2]> = Loop(%m, _, %e) name=grow {\n"
                       "    body=graph body {\n"
                       "      input %i : i64[]\n"
                       "      input %c : bool[]\n"
                       "      input %s : seq<f32[2]>\n"
                       "      outer %x : f32[2] from %x\n"
                       "      %s2 : seq<f32[2]> = SequenceInsert(%s, %x) name=append\n"
                       "      output %c, %s2\n"
                       "    }\n"
                       "  }\n"
                       "  %t : f32[?,2] = ConcatFromSequence(%r) name=cat {axis=0, new_axis=1}\n"
                       "  output %t\n"
                       "}\n");
    char *err;
    cr_assert_not(lower(g, NULL, 0, &err));
    cr_assert(err && strstr(err, "'grow'") && strstr(err, "trip count"), "got: %s",
              err ? err : "");
    free(err);
    ir_graph_free(g);
}

static const char if_seq[] = "kiln-ir 1\n"
                             "opset \"\"=13\n"
                             "graph g {\n"
                             "  input %c : bool[]\n"
                             "  input %a : f32[3]\n"
                             "  %r : seq<f32[3]> = If(%c) name=pick {\n"
                             "    else_branch=graph other {\n"
                             "      outer %a : f32[3] from %a\n"
                             "      %n : f32[3] = Neg(%a) name=neg\n"
                             "      %s : seq<f32[3]> = SequenceConstruct(%n, %a) name=two\n"
                             "      output %s\n"
                             "    },\n"
                             "    then_branch=graph same {\n"
                             "      outer %a : f32[3] from %a\n"
                             "      %s : seq<f32[3]> = SequenceConstruct(%a, %a) name=two\n"
                             "      output %s\n"
                             "    }\n"
                             "  }\n"
                             "  output %r\n"
                             "}\n";

Test(lower_sequences, an_if_whose_branches_build_sequences_of_one_length_gets_one_output_per_element) {
    IrGraph *g = parse(if_seq);
    char *err;
    cr_assert(lower(g, NULL, 0, &err), "lowered: %s", err ? err : "");
    cr_assert_eq(g->n_outputs, 2);
    const IrNode *n = NULL;
    for (uint32_t i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == IR_OP_IF) n = &g->nodes[i];
    cr_assert(n);
    cr_assert_eq(n->n_outputs, 2);
    for (uint32_t s = 0; s < g->n_subgraphs; s++) cr_assert_eq(g->subgraphs[s]->n_outputs, 2);
    assert_verifies(g);
    free(err);
    ir_graph_free(g);
}

Test(lower_sequences, refuses_an_if_whose_branches_build_sequences_of_different_lengths) {
    char *text = strdup(if_seq);
    char *p = strstr(text, "SequenceConstruct(%n, %a)");
    cr_assert(p);
    memcpy(p, "SequenceConstruct(%n)    ", strlen("SequenceConstruct(%n, %a)"));
    IrGraph *g = parse(text);
    char *err;
    cr_assert_not(lower(g, NULL, 0, &err));
    cr_assert(err && strstr(err, "'pick'") && strstr(err, "differs"), "got: %s", err ? err : "");
    free(err);
    free(text);
    ir_graph_free(g);
}
