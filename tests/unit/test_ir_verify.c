/* Unit tests of ir/verify.c: one test per rule, each on a small graph built in C that
 * breaks exactly that rule, plus a well-formed graph that passes. */
#include <criterion/criterion.h>
#include <string.h>

#include "ir/ir.h"
#include "ir/shape.h"

static uint32_t add_input(IrGraph *g, const char *name) {
    IrType t = ir_type_tensor(IR_DTYPE_F32, 1, (int64_t[]){4});
    uint32_t v = ir_value_add(g, name, &t, IR_VALUE_INPUT);
    ir_graph_add_input(g, v);
    return v;
}

static uint32_t add_node(IrGraph *g, IrOp op, const char *name, const uint32_t *ins,
                         uint32_t n_in, uint32_t n_out, uint32_t *outs) {
    uint32_t id = ir_node_add(g, op, name, n_in, n_out, 0);
    for (uint32_t k = 0; k < n_out; k++) {
        char vname[32];
        snprintf(vname, sizeof vname, "%s_out%u", name, k);
        uint32_t v = ir_value_add(g, vname, NULL, IR_VALUE_NODE);
        g->values[v].producer = id;
        g->values[v].result_index = k;
        g->nodes[id].outputs[k] = v;
        if (outs) outs[k] = v;
    }
    for (uint32_t k = 0; k < n_in; k++) g->nodes[id].inputs[k] = ins[k];
    return id;
}

/* x -> Relu -> Add(x) -> output */
static IrGraph *well_formed(void) {
    IrGraph *g = ir_graph_new("g");
    uint32_t x = add_input(g, "x");
    uint32_t r, s;
    add_node(g, IR_OP_RELU, "relu", (uint32_t[]){x}, 1, 1, &r);
    add_node(g, IR_OP_ADD, "add", (uint32_t[]){r, x}, 2, 1, &s);
    ir_graph_add_output(g, s);
    return g;
}

/* Runs the verifier expecting failure with a message containing needle. */
static void expect_failure(const IrGraph *g, const IrVerifyOpts *opts, const char *needle) {
    Diag d;
    diag_init(&d);
    cr_assert(!ir_verify_opts(g, opts, &d), "verifier accepted a graph that breaks a rule");
    bool found = false;
    for (unsigned i = 0; i < d.n_msgs; i++)
        if (strstr(d.msgs[i].text, needle)) found = true;
    if (!found) diag_print(&d, stderr, "verify");
    cr_assert(found, "no diagnostic mentions '%s'", needle);
    diag_free(&d);
}

static void expect_ok(const IrGraph *g, const IrVerifyOpts *opts) {
    Diag d;
    diag_init(&d);
    bool ok = ir_verify_opts(g, opts, &d);
    if (!ok) diag_print(&d, stderr, "verify");
    cr_assert(ok);
    diag_free(&d);
}

Test(ir_verify, accepts_a_well_formed_graph) {
    IrGraph *g = well_formed();
    expect_ok(g, NULL);
    Diag d;
    diag_init(&d);
    cr_assert(ir_verify(g, &d));
    diag_free(&d);
    ir_graph_free(g);
}

Test(ir_verify, rejects_value_with_two_producers) {
    IrGraph *g = well_formed();
    uint32_t out = g->nodes[0].outputs[0];
    g->nodes[1].outputs[0] = out; /* add now also claims relu's output */
    expect_failure(g, NULL, "already produced by node 'relu'");
    ir_graph_free(g);
}

Test(ir_verify, rejects_a_use_before_the_definition) {
    IrGraph *g = well_formed();
    IrNode tmp = g->nodes[0];
    g->nodes[0] = g->nodes[1];
    g->nodes[1] = tmp;
    g->values[g->nodes[0].outputs[0]].producer = 0;
    g->values[g->nodes[1].outputs[0]].producer = 1;
    expect_failure(g, NULL, "used before it is defined");
    ir_graph_free(g);
}

Test(ir_verify, rejects_a_producer_that_does_not_point_back) {
    IrGraph *g = well_formed();
    g->values[g->nodes[1].outputs[0]].result_index = 3;
    expect_failure(g, NULL, "does not point back");
    ir_graph_free(g);
}

Test(ir_verify, rejects_a_read_node_value_without_producer) {
    IrGraph *g = well_formed();
    uint32_t orphan = ir_value_add(g, "orphan", NULL, IR_VALUE_NODE);
    expect_ok(g, NULL); /* left behind by a pass: nobody reads it */
    g->nodes[1].inputs[0] = orphan;
    expect_failure(g, NULL, "'orphan' has no producer");
    ir_graph_free(g);
}

Test(ir_verify, rejects_a_node_writing_a_graph_input) {
    IrGraph *g = well_formed();
    g->nodes[1].outputs[0] = g->inputs[0];
    expect_failure(g, NULL, "is a graph input, constant or outer value");
    ir_graph_free(g);
}

Test(ir_verify, rejects_an_input_value_missing_from_the_graph_inputs) {
    IrGraph *g = well_formed();
    ir_value_add(g, "stray", NULL, IR_VALUE_INPUT);
    expect_failure(g, NULL, "'stray' is not a graph input");
    ir_graph_free(g);
}

Test(ir_verify, rejects_an_input_id_out_of_range) {
    IrGraph *g = well_formed();
    g->nodes[1].inputs[1] = 999;
    expect_failure(g, NULL, "refers to value 999");
    ir_graph_free(g);
}

Test(ir_verify, rejects_too_few_inputs) {
    IrGraph *g = well_formed();
    uint32_t s;
    add_node(g, IR_OP_ADD, "lonely_add", (uint32_t[]){g->inputs[0]}, 1, 1, &s);
    expect_failure(g, NULL, "1 inputs, at least 2 required");
    ir_graph_free(g);
}

Test(ir_verify, accepts_trailing_omitted_optional_inputs) {
    IrGraph *g = well_formed();
    uint32_t y;
    /* Clip(x, min, max) with min and max omitted, written as IR_NONE slots */
    add_node(g, IR_OP_CLIP, "clip", (uint32_t[]){g->inputs[0], IR_NONE, IR_NONE}, 3, 1, &y);
    expect_ok(g, NULL);
    ir_graph_free(g);
}

Test(ir_verify, rejects_an_absent_required_input) {
    IrGraph *g = well_formed();
    uint32_t y;
    /* Add("", x): two positions, but the first required input is absent */
    add_node(g, IR_OP_ADD, "half_add", (uint32_t[]){IR_NONE, g->inputs[0]}, 2, 1, &y);
    expect_failure(g, NULL, "required input 0 is absent");
    ir_graph_free(g);
}

Test(ir_verify, accepts_an_absent_optional_input_before_a_present_one) {
    IrGraph *g = well_formed();
    uint32_t y;
    /* Clip(x, "", max) */
    add_node(g, IR_OP_CLIP, "clip", (uint32_t[]){g->inputs[0], IR_NONE, g->inputs[0]}, 3, 1,
             &y);
    expect_ok(g, NULL);
    ir_graph_free(g);
}

Test(ir_verify, takes_required_inputs_from_the_schema_not_the_positions) {
    /* Loop keeps two positions (M, cond) that are both optional; Conv needs X and W */
    cr_expect_eq(ir_op_info(IR_OP_LOOP)->in_min, 2);
    cr_expect_eq(ir_op_info(IR_OP_LOOP)->in_req, 0);
    cr_expect_eq(ir_op_info(IR_OP_CONV)->in_req, 2);
    cr_expect_eq(ir_op_info(IR_OP_CONCAT)->in_req, 1);
}

Test(ir_verify, rejects_too_many_outputs) {
    IrGraph *g = well_formed();
    uint32_t y[2];
    add_node(g, IR_OP_RELU, "relu2", (uint32_t[]){g->inputs[0]}, 1, 2, y);
    expect_failure(g, NULL, "2 outputs, at most 1 allowed");
    ir_graph_free(g);
}

Test(ir_verify, checks_arity_against_the_bounds_of_every_version) {
    IrGraph *g = well_formed();
    uint32_t y;
    /* Unsqueeze-11 took axes as an attribute: one input is fine in every opset */
    uint32_t n = add_node(g, IR_OP_UNSQUEEZE, "unsq", (uint32_t[]){g->inputs[0]}, 1, 1, &y);
    g->nodes[n].opset = 11;
    expect_ok(g, NULL);
    /* Relu never took more than one input */
    add_node(g, IR_OP_RELU, "relu3", (uint32_t[]){g->inputs[0], g->inputs[0]}, 2, 1, &y);
    expect_failure(g, NULL, "at most 1 allowed");
    ir_graph_free(g);
}

Test(ir_verify, rejects_an_attribute_of_the_wrong_kind) {
    IrGraph *g = well_formed();
    uint32_t y;
    uint32_t n = add_node(g, IR_OP_CONCAT, "cat", (uint32_t[]){g->inputs[0]}, 1, 1, &y);
    IrAttr *a = ir_node_attr(&g->nodes[n], IR_ATTR_CONCAT_AXIS);
    a->present = true;
    a->kind = IR_ATTR_KIND_FLOAT;
    expect_failure(g, NULL, "attribute 'axis' has kind");
    ir_graph_free(g);
}

Test(ir_verify, rejects_a_graph_attribute_naming_a_missing_subgraph) {
    IrGraph *g = well_formed();
    uint32_t y;
    uint32_t cond = add_input(g, "cond");
    uint32_t n = add_node(g, IR_OP_IF, "if", (uint32_t[]){cond}, 1, 1, &y);
    uint32_t bad = 7;
    IrAttr *a = ir_node_attr(&g->nodes[n], IR_ATTR_IF_THEN_BRANCH);
    a->present = true;
    a->n = 1;
    a->graphs = ir_arena_memdup(g->arena, &bad, sizeof bad);
    expect_failure(g, NULL, "refers to subgraph 7");
    ir_graph_free(g);
}

Test(ir_verify, rejects_an_outer_value_outside_the_parent) {
    IrGraph *g = well_formed();
    uint32_t si = ir_graph_add_subgraph(g, "body");
    IrGraph *s = g->subgraphs[si];
    uint32_t o = ir_value_add(s, "outer_x", NULL, IR_VALUE_OUTER);
    s->values[o].producer = 12345;
    ir_graph_add_output(s, o);
    expect_failure(g, NULL, "outer value 'outer_x' refers to value 12345");
    ir_graph_free(g);
}

Test(ir_verify, verifies_subgraphs_recursively) {
    IrGraph *g = well_formed();
    uint32_t si = ir_graph_add_subgraph(g, "body");
    IrGraph *s = g->subgraphs[si];
    uint32_t o = ir_value_add(s, "outer_x", NULL, IR_VALUE_OUTER);
    s->values[o].producer = g->inputs[0];
    uint32_t y;
    add_node(s, IR_OP_NEG, "neg", (uint32_t[]){o}, 1, 1, &y);
    ir_graph_add_output(s, y);
    expect_ok(g, NULL);
    s->nodes[0].inputs[0] = 77; /* break the subgraph only */
    expect_failure(g, NULL, "graph 'body'");
    ir_graph_free(g);
}

Test(ir_verify, rejects_a_graph_output_that_does_not_exist) {
    IrGraph *g = well_formed();
    ir_graph_add_output(g, 4242);
    expect_failure(g, NULL, "output 1 refers to value 4242");
    ir_graph_free(g);
}

Test(ir_verify, rejects_a_graph_output_of_a_dead_node) {
    IrGraph *g = well_formed();
    g->nodes[1].dead = true;
    expect_failure(g, NULL, "not produced by any live node");
    ir_graph_free(g);
}

Test(ir_verify, requires_dtypes_only_when_asked_and_after_inference_has_them) {
    IrGraph *g = well_formed();
    IrVerifyOpts typed = {true};
    expect_ok(g, NULL);
    expect_failure(g, &typed, "has no type");
    Diag d;
    diag_init(&d);
    cr_assert(ir_infer_shapes(g, &d));
    diag_free(&d);
    expect_ok(g, &typed);
    ir_graph_free(g);
}
