/* Unit tests of shape and type inference (ir/shape.c and ir/shape_*.c) on graphs built
 * in C: broadcasting with symbols, merging with declared types, convolution geometry,
 * value-dependent ops through constants and partial evaluation, opset differences, and
 * control flow. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "ir/ir.h"
#include "ir/shape.h"

/* ---- graph building helpers ---- */

static uint32_t add_input(IrGraph *g, const char *name, IrDType dt, int rank,
                          const int64_t *dims) {
    IrType t = ir_type_tensor(dt, rank, dims);
    uint32_t v = ir_value_add(g, name, &t, IR_VALUE_INPUT);
    ir_graph_add_input(g, v);
    return v;
}

static uint32_t add_const_i64(IrGraph *g, const char *name, int64_t n, const int64_t *vals) {
    uint32_t v = ir_value_add(g, name, NULL, IR_VALUE_CONST);
    IrTensor *t = ir_tensor_new(g->arena, IR_DTYPE_I64, 1, &n);
    memcpy(t->data, vals, (size_t)n * sizeof *vals);
    g->values[v].tensor = t;
    return v;
}

/* A node of op reading ins, with n_out fresh outputs; returns the node id, outputs in outs. */
static uint32_t add_node(IrGraph *g, IrOp op, const uint32_t *ins, uint32_t n_in,
                         uint32_t n_out, uint32_t *outs) {
    uint32_t id = ir_node_add(g, op, "n", n_in, n_out, 0);
    for (uint32_t k = 0; k < n_out; k++) {
        char name[32];
        snprintf(name, sizeof name, "v%u_%u", id, k);
        uint32_t v = ir_value_add(g, name, NULL, IR_VALUE_NODE);
        g->values[v].producer = id;
        g->values[v].result_index = k;
        g->nodes[id].outputs[k] = v;
        if (outs) outs[k] = v;
    }
    for (uint32_t k = 0; k < n_in; k++) g->nodes[id].inputs[k] = ins[k];
    return id;
}

static uint32_t add1(IrGraph *g, IrOp op, const uint32_t *ins, uint32_t n_in) {
    uint32_t out;
    add_node(g, op, ins, n_in, 1, &out);
    return out;
}

static void set_i(IrGraph *g, uint32_t node, IrAttrId id, int64_t v) {
    IrAttr *a = ir_node_attr(&g->nodes[node], id);
    a->present = true;
    a->i = v;
}

static void set_s(IrGraph *g, uint32_t node, IrAttrId id, const char *s) {
    IrAttr *a = ir_node_attr(&g->nodes[node], id);
    a->present = true;
    a->s.data = ir_arena_strdup(g->arena, s);
    a->s.len = strlen(s);
}

static void set_ints(IrGraph *g, uint32_t node, IrAttrId id, uint32_t n, const int64_t *v) {
    IrAttr *a = ir_node_attr(&g->nodes[node], id);
    a->present = true;
    a->n = n;
    a->ints = ir_arena_memdup(g->arena, v, n * sizeof *v);
}

static void infer_ok(IrGraph *g) {
    Diag d;
    diag_init(&d);
    bool ok = ir_infer_shapes(g, &d);
    if (!ok) diag_print(&d, stderr, "test");
    cr_assert(ok);
    cr_assert(!diag_has_errors(&d));
    diag_free(&d);
}

static void assert_type(const IrGraph *g, uint32_t v, const char *expected) {
    char buf[256];
    ir_shape_type_str(g, &g->values[v].type, buf, sizeof buf);
    cr_assert_str_eq(buf, expected);
}

/* ---- elementwise and merging ---- */

Test(ir_shape, broadcasts_symbolic_and_static_dims) {
    IrGraph *g = ir_graph_new("t");
    IrType t = ir_type_tensor(IR_DTYPE_F32, 2, (int64_t[]){IR_DIM_UNKNOWN, 3});
    t.syms[0] = ir_graph_sym(g, "N");
    uint32_t a = ir_value_add(g, "a", &t, IR_VALUE_INPUT);
    ir_graph_add_input(g, a);
    uint32_t b = add_input(g, "b", IR_DTYPE_F32, 2, (int64_t[]){1, 3});
    uint32_t c = add_input(g, "c", IR_DTYPE_F32, 3, (int64_t[]){4, 1, 1});
    uint32_t s = add1(g, IR_OP_ADD, (uint32_t[]){a, b}, 2);
    uint32_t s2 = add1(g, IR_OP_MUL, (uint32_t[]){s, c}, 2);
    uint32_t eq = add1(g, IR_OP_EQUAL, (uint32_t[]){a, a}, 2);
    infer_ok(g);
    assert_type(g, s, "tensor(f32)[N,3]");
    assert_type(g, s2, "tensor(f32)[4,N,3]");
    assert_type(g, eq, "tensor(bool)[N,3]");
    ir_graph_free(g);
}

Test(ir_shape, reports_a_conflict_with_the_declared_type_naming_the_node) {
    IrGraph *g = ir_graph_new("t");
    uint32_t a = add_input(g, "a", IR_DTYPE_F32, 1, (int64_t[]){3});
    uint32_t r = add1(g, IR_OP_RELU, (uint32_t[]){a}, 1);
    g->nodes[0].name = "my_relu";
    g->values[r].type = ir_type_tensor(IR_DTYPE_F32, 1, (int64_t[]){4});
    Diag d;
    diag_init(&d);
    cr_assert(!ir_infer_shapes(g, &d));
    cr_assert_eq(d.n_errors, 1);
    cr_assert(strstr(d.msgs[0].text, "my_relu"));
    cr_assert(strstr(d.msgs[0].text, "Relu"));
    cr_assert(strstr(d.msgs[0].text, "tensor(f32)[3]"));
    cr_assert(strstr(d.msgs[0].text, "tensor(f32)[4]"));
    diag_free(&d);
    ir_graph_free(g);
}

Test(ir_shape, lets_a_static_dim_beat_a_declared_symbol_and_keeps_what_it_cannot_infer) {
    IrGraph *g = ir_graph_new("t");
    uint32_t a = add_input(g, "a", IR_DTYPE_F32, 2, (int64_t[]){2, 3});
    uint32_t r = add1(g, IR_OP_SIGMOID, (uint32_t[]){a}, 1);
    IrType decl = ir_type_tensor(IR_DTYPE_F32, 2, (int64_t[]){IR_DIM_UNKNOWN, 3});
    decl.syms[0] = ir_graph_sym(g, "B");
    g->values[r].type = decl;
    /* an op with no inference function keeps its declared type */
    uint32_t u = add1(g, IR_OP_UNKNOWN, (uint32_t[]){a}, 1);
    g->values[u].type = ir_type_tensor(IR_DTYPE_I8, 1, (int64_t[]){7});
    infer_ok(g);
    assert_type(g, r, "tensor(f32)[2,3]");
    assert_type(g, u, "tensor(i8)[7]");
    ir_graph_free(g);
}

Test(ir_shape, casts_change_only_the_dtype) {
    IrGraph *g = ir_graph_new("t");
    uint32_t a = add_input(g, "a", IR_DTYPE_F32, 2, (int64_t[]){2, 3});
    uint32_t c;
    uint32_t n = add_node(g, IR_OP_CAST, (uint32_t[]){a}, 1, 1, &c);
    set_i(g, n, IR_ATTR_CAST_TO, IR_DTYPE_F16);
    infer_ok(g);
    assert_type(g, c, "tensor(f16)[2,3]");
    ir_graph_free(g);
}

/* ---- convolution, pooling, matrix products ---- */

Test(ir_shape, computes_conv_output_from_pads_strides_and_dilations) {
    IrGraph *g = ir_graph_new("t");
    uint32_t x = add_input(g, "x", IR_DTYPE_F32, 4, (int64_t[]){1, 3, 32, 31});
    uint32_t w = add_input(g, "w", IR_DTYPE_F32, 4, (int64_t[]){16, 3, 3, 3});
    uint32_t y, y2;
    uint32_t n = add_node(g, IR_OP_CONV, (uint32_t[]){x, w}, 2, 1, &y);
    set_ints(g, n, IR_ATTR_CONV_STRIDES, 2, (int64_t[]){2, 2});
    set_ints(g, n, IR_ATTR_CONV_PADS, 4, (int64_t[]){1, 1, 1, 1});
    uint32_t n2 = add_node(g, IR_OP_CONV, (uint32_t[]){x, w}, 2, 1, &y2);
    set_ints(g, n2, IR_ATTR_CONV_DILATIONS, 2, (int64_t[]){2, 2});
    set_s(g, n2, IR_ATTR_CONV_AUTO_PAD, "SAME_UPPER");
    infer_ok(g);
    assert_type(g, y, "tensor(f32)[1,16,16,16]");
    assert_type(g, y2, "tensor(f32)[1,16,32,31]");
    ir_graph_free(g);
}

Test(ir_shape, rounds_pool_windows_up_in_ceil_mode) {
    IrGraph *g = ir_graph_new("t");
    uint32_t x = add_input(g, "x", IR_DTYPE_F32, 4, (int64_t[]){1, 1, 4, 4});
    uint32_t y[2];
    uint32_t n = add_node(g, IR_OP_MAX_POOL, (uint32_t[]){x}, 1, 2, y);
    set_ints(g, n, IR_ATTR_MAX_POOL_KERNEL_SHAPE, 2, (int64_t[]){3, 3});
    set_ints(g, n, IR_ATTR_MAX_POOL_STRIDES, 2, (int64_t[]){2, 2});
    set_i(g, n, IR_ATTR_MAX_POOL_CEIL_MODE, 1);
    infer_ok(g);
    assert_type(g, y[0], "tensor(f32)[1,1,2,2]");
    assert_type(g, y[1], "tensor(i64)[1,1,2,2]");
    ir_graph_free(g);
}

Test(ir_shape, computes_conv_transpose_output_size) {
    IrGraph *g = ir_graph_new("t");
    uint32_t x = add_input(g, "x", IR_DTYPE_F32, 4, (int64_t[]){1, 1, 3, 3});
    uint32_t w = add_input(g, "w", IR_DTYPE_F32, 4, (int64_t[]){1, 2, 3, 3});
    uint32_t y;
    uint32_t n = add_node(g, IR_OP_CONV_TRANSPOSE, (uint32_t[]){x, w}, 2, 1, &y);
    set_ints(g, n, IR_ATTR_CONV_TRANSPOSE_STRIDES, 2, (int64_t[]){3, 2});
    infer_ok(g);
    assert_type(g, y, "tensor(f32)[1,2,9,7]");
    ir_graph_free(g);
}

Test(ir_shape, follows_gemm_transposes_and_numpy_matmul_rules) {
    IrGraph *g = ir_graph_new("t");
    uint32_t a = add_input(g, "a", IR_DTYPE_F32, 2, (int64_t[]){4, 3});
    uint32_t b = add_input(g, "b", IR_DTYPE_F32, 2, (int64_t[]){5, 4});
    uint32_t y;
    uint32_t n = add_node(g, IR_OP_GEMM, (uint32_t[]){a, b}, 2, 1, &y);
    set_i(g, n, IR_ATTR_GEMM_TRANS_A, 1);
    set_i(g, n, IR_ATTR_GEMM_TRANS_B, 1);
    uint32_t p = add_input(g, "p", IR_DTYPE_F32, 4, (int64_t[]){2, 1, 3, 4});
    uint32_t q = add_input(g, "q", IR_DTYPE_F32, 3, (int64_t[]){5, 4, 6});
    uint32_t v = add_input(g, "v", IR_DTYPE_F32, 1, (int64_t[]){4});
    uint32_t m1 = add1(g, IR_OP_MAT_MUL, (uint32_t[]){p, q}, 2);
    uint32_t m2 = add1(g, IR_OP_MAT_MUL, (uint32_t[]){p, v}, 2);
    uint32_t m3 = add1(g, IR_OP_MAT_MUL, (uint32_t[]){v, q}, 2);
    infer_ok(g);
    assert_type(g, y, "tensor(f32)[3,5]");
    assert_type(g, m1, "tensor(f32)[2,5,3,6]");
    assert_type(g, m2, "tensor(f32)[2,1,3]");
    assert_type(g, m3, "tensor(f32)[5,6]");
    ir_graph_free(g);
}

Test(ir_shape, reports_mismatched_matmul_inner_dims) {
    IrGraph *g = ir_graph_new("t");
    uint32_t a = add_input(g, "a", IR_DTYPE_F32, 2, (int64_t[]){4, 3});
    uint32_t b = add_input(g, "b", IR_DTYPE_F32, 2, (int64_t[]){5, 4});
    add1(g, IR_OP_MAT_MUL, (uint32_t[]){a, b}, 2);
    Diag d;
    diag_init(&d);
    cr_assert(!ir_infer_shapes(g, &d));
    cr_assert(strstr(d.msgs[0].text, "MatMul"));
    diag_free(&d);
    ir_graph_free(g);
}

/* ---- value-dependent ops ---- */

Test(ir_shape, reshapes_with_a_constant_shape_holding_zero_and_minus_one) {
    IrGraph *g = ir_graph_new("t");
    IrType t = ir_type_tensor(IR_DTYPE_F32, 3, (int64_t[]){IR_DIM_UNKNOWN, 3, 4});
    t.syms[0] = ir_graph_sym(g, "N");
    uint32_t x = ir_value_add(g, "x", &t, IR_VALUE_INPUT);
    ir_graph_add_input(g, x);
    uint32_t s = add_const_i64(g, "s", 2, (int64_t[]){0, 12});
    uint32_t r = add1(g, IR_OP_RESHAPE, (uint32_t[]){x, s}, 2);
    uint32_t x2 = add_input(g, "x2", IR_DTYPE_F32, 3, (int64_t[]){2, 3, 4});
    uint32_t s2 = add_const_i64(g, "s2", 2, (int64_t[]){-1, 4});
    uint32_t r2 = add1(g, IR_OP_RESHAPE, (uint32_t[]){x2, s2}, 2);
    uint32_t dyn = add_input(g, "dyn", IR_DTYPE_I64, 1, (int64_t[]){3});
    uint32_t r3 = add1(g, IR_OP_RESHAPE, (uint32_t[]){x2, dyn}, 2);
    infer_ok(g);
    assert_type(g, r, "tensor(f32)[N,12]");
    assert_type(g, r2, "tensor(f32)[6,4]");
    assert_type(g, r3, "tensor(f32)[?,?,?]");
    ir_graph_free(g);
}

Test(ir_shape, evaluates_shape_gather_concat_chains_feeding_reshape) {
    IrGraph *g = ir_graph_new("t");
    uint32_t x = add_input(g, "x", IR_DTYPE_F32, 3, (int64_t[]){2, 3, 4});
    uint32_t sh = add1(g, IR_OP_SHAPE, (uint32_t[]){x}, 1);
    uint32_t idx = add_const_i64(g, "idx", 1, (int64_t[]){0});
    uint32_t gat = add1(g, IR_OP_GATHER, (uint32_t[]){sh, idx}, 2);
    uint32_t m1 = add_const_i64(g, "m1", 1, (int64_t[]){-1});
    uint32_t cat;
    uint32_t n = add_node(g, IR_OP_CONCAT, (uint32_t[]){gat, m1}, 2, 1, &cat);
    set_i(g, n, IR_ATTR_CONCAT_AXIS, 0);
    uint32_t r = add1(g, IR_OP_RESHAPE, (uint32_t[]){x, cat}, 2);
    infer_ok(g);
    assert_type(g, sh, "tensor(i64)[3]");
    assert_type(g, cat, "tensor(i64)[2]");
    assert_type(g, r, "tensor(f32)[2,12]");
    ir_graph_free(g);
}

Test(ir_shape, reads_unsqueeze_axes_from_the_attribute_before_opset_13_and_the_input_after) {
    IrGraph *g = ir_graph_new("t");
    uint32_t x = add_input(g, "x", IR_DTYPE_F32, 2, (int64_t[]){3, 4});
    uint32_t u11;
    uint32_t n = add_node(g, IR_OP_UNSQUEEZE, (uint32_t[]){x}, 1, 1, &u11);
    g->nodes[n].opset = 11;
    set_ints(g, n, IR_ATTR_UNSQUEEZE_AXES, 2, (int64_t[]){0, -1});
    uint32_t axes = add_const_i64(g, "axes", 1, (int64_t[]){1});
    uint32_t u13;
    n = add_node(g, IR_OP_UNSQUEEZE, (uint32_t[]){x, axes}, 2, 1, &u13);
    g->nodes[n].opset = 13;
    uint32_t sq;
    n = add_node(g, IR_OP_SQUEEZE, (uint32_t[]){u11}, 1, 1, &sq);
    g->nodes[n].opset = 11;
    infer_ok(g);
    assert_type(g, u11, "tensor(f32)[1,3,4,1]");
    assert_type(g, u13, "tensor(f32)[3,1,4]");
    assert_type(g, sq, "tensor(f32)[3,4]");
    ir_graph_free(g);
}

Test(ir_shape, splits_evenly_or_by_constant_sizes) {
    IrGraph *g = ir_graph_new("t");
    uint32_t x = add_input(g, "x", IR_DTYPE_F32, 2, (int64_t[]){6, 4});
    uint32_t o[3];
    add_node(g, IR_OP_SPLIT, (uint32_t[]){x}, 1, 3, o);
    uint32_t sizes = add_const_i64(g, "sizes", 2, (int64_t[]){1, 3});
    uint32_t p[2];
    uint32_t n = add_node(g, IR_OP_SPLIT, (uint32_t[]){x, sizes}, 2, 2, p);
    set_i(g, n, IR_ATTR_SPLIT_AXIS, 1);
    infer_ok(g);
    assert_type(g, o[0], "tensor(f32)[2,4]");
    assert_type(g, o[2], "tensor(f32)[2,4]");
    assert_type(g, p[0], "tensor(f32)[6,1]");
    assert_type(g, p[1], "tensor(f32)[6,3]");
    ir_graph_free(g);
}

Test(ir_shape, slices_with_negative_steps_and_clamped_bounds) {
    IrGraph *g = ir_graph_new("t");
    uint32_t x = add_input(g, "x", IR_DTYPE_F32, 2, (int64_t[]){10, 5});
    uint32_t st = add_const_i64(g, "st", 2, (int64_t[]){-1, 1});
    uint32_t en = add_const_i64(g, "en", 2, (int64_t[]){INT64_MIN, 1000});
    uint32_t ax = add_const_i64(g, "ax", 2, (int64_t[]){0, 1});
    uint32_t sp = add_const_i64(g, "sp", 2, (int64_t[]){-3, 2});
    uint32_t y = add1(g, IR_OP_SLICE, (uint32_t[]){x, st, en, ax, sp}, 5);
    infer_ok(g);
    assert_type(g, y, "tensor(f32)[4,2]");
    ir_graph_free(g);
}

Test(ir_shape, reduces_over_constant_axes_with_and_without_keepdims) {
    IrGraph *g = ir_graph_new("t");
    uint32_t x = add_input(g, "x", IR_DTYPE_F32, 3, (int64_t[]){2, 3, 4});
    uint32_t axes = add_const_i64(g, "axes", 1, (int64_t[]){-1});
    uint32_t keep = add1(g, IR_OP_REDUCE_SUM, (uint32_t[]){x, axes}, 2);
    uint32_t drop;
    uint32_t n = add_node(g, IR_OP_REDUCE_MEAN, (uint32_t[]){x}, 1, 1, &drop);
    set_i(g, n, IR_ATTR_REDUCE_MEAN_KEEPDIMS, 0);
    uint32_t am = add1(g, IR_OP_ARG_MAX, (uint32_t[]){x}, 1);
    infer_ok(g);
    assert_type(g, keep, "tensor(f32)[2,3,1]");
    assert_type(g, drop, "tensor(f32)[]");
    assert_type(g, am, "tensor(i64)[1,3,4]");
    ir_graph_free(g);
}

Test(ir_shape, transposes_concats_and_flattens) {
    IrGraph *g = ir_graph_new("t");
    uint32_t x = add_input(g, "x", IR_DTYPE_F32, 3, (int64_t[]){2, 3, 4});
    uint32_t y = add_input(g, "y", IR_DTYPE_F32, 3, (int64_t[]){2, 5, 4});
    uint32_t t = add1(g, IR_OP_TRANSPOSE, (uint32_t[]){x}, 1);
    uint32_t c;
    uint32_t n = add_node(g, IR_OP_CONCAT, (uint32_t[]){x, y}, 2, 1, &c);
    set_i(g, n, IR_ATTR_CONCAT_AXIS, -2);
    uint32_t f = add1(g, IR_OP_FLATTEN, (uint32_t[]){c}, 1);
    infer_ok(g);
    assert_type(g, t, "tensor(f32)[4,3,2]");
    assert_type(g, c, "tensor(f32)[2,8,4]");
    assert_type(g, f, "tensor(f32)[2,32]");
    ir_graph_free(g);
}

Test(ir_shape, gives_data_dependent_ops_an_upper_bound_or_an_unknown_dim) {
    IrGraph *g = ir_graph_new("t");
    uint32_t x = add_input(g, "x", IR_DTYPE_F32, 3, (int64_t[]){2, 3, 4});
    uint32_t nz = add1(g, IR_OP_NON_ZERO, (uint32_t[]){x}, 1);
    uint32_t dyn = add_input(g, "k", IR_DTYPE_I64, 1, (int64_t[]){1});
    uint32_t tk[2];
    add_node(g, IR_OP_TOP_K, (uint32_t[]){x, dyn}, 2, 2, tk);
    infer_ok(g);
    assert_type(g, nz, "tensor(i64)[3,24]"); /* upper bound: numel(x) */
    assert_type(g, tk[0], "tensor(f32)[2,3,?]");
    assert_type(g, tk[1], "tensor(i64)[2,3,?]");
    ir_graph_free(g);
}

Test(ir_shape, expands_tiles_and_pads_with_constant_operands) {
    IrGraph *g = ir_graph_new("t");
    uint32_t x = add_input(g, "x", IR_DTYPE_F32, 2, (int64_t[]){3, 1});
    uint32_t s = add_const_i64(g, "s", 3, (int64_t[]){2, 1, 6});
    uint32_t e = add1(g, IR_OP_EXPAND, (uint32_t[]){x, s}, 2);
    uint32_t reps = add_const_i64(g, "reps", 2, (int64_t[]){2, 3});
    uint32_t t = add1(g, IR_OP_TILE, (uint32_t[]){x, reps}, 2);
    uint32_t pads = add_const_i64(g, "pads", 4, (int64_t[]){1, 0, 2, 3});
    uint32_t p = add1(g, IR_OP_PAD, (uint32_t[]){x, pads}, 2);
    infer_ok(g);
    assert_type(g, e, "tensor(f32)[2,3,6]");
    assert_type(g, t, "tensor(f32)[6,3]");
    assert_type(g, p, "tensor(f32)[6,4]");
    ir_graph_free(g);
}

Test(ir_shape, types_constant_nodes_and_uses_their_values) {
    IrGraph *g = ir_graph_new("t");
    uint32_t x = add_input(g, "x", IR_DTYPE_F32, 1, (int64_t[]){12});
    uint32_t k;
    uint32_t n = add_node(g, IR_OP_CONSTANT, NULL, 0, 1, &k);
    set_ints(g, n, IR_ATTR_CONSTANT_VALUE_INTS, 2, (int64_t[]){3, -1});
    uint32_t r = add1(g, IR_OP_RESHAPE, (uint32_t[]){x, k}, 2);
    uint32_t k2;
    n = add_node(g, IR_OP_CONSTANT, NULL, 0, 1, &k2);
    set_ints(g, n, IR_ATTR_CONSTANT_VALUE_INTS, 2, (int64_t[]){2, 5});
    uint32_t cos = add1(g, IR_OP_CONSTANT_OF_SHAPE, (uint32_t[]){k2}, 1);
    infer_ok(g);
    assert_type(g, k, "tensor(i64)[2]");
    assert_type(g, r, "tensor(f32)[3,4]");
    assert_type(g, cos, "tensor(f32)[2,5]");
    ir_graph_free(g);
}

/* ---- partial evaluation (ir/shape_eval.c) ---- */

static uint32_t add_const_scalar(IrGraph *g, const char *name, IrDType dt, const void *val) {
    uint32_t v = ir_value_add(g, name, NULL, IR_VALUE_CONST);
    IrTensor *t = ir_tensor_new(g->arena, dt, 0, NULL);
    memcpy(t->data, val, t->size_bytes);
    g->values[v].tensor = t;
    return v;
}

static void fold_ok(IrGraph *g) {
    Diag d;
    diag_init(&d);
    bool ok = ir_infer_shapes_fold(g, &d);
    if (!ok) diag_print(&d, stderr, "test");
    cr_assert(ok);
    diag_free(&d);
}

/* The folded constant of value v, as int64s. */
static void assert_const_ints(const IrGraph *g, uint32_t v, IrDType dt, uint32_t n,
                              const int64_t *expected) {
    const IrValue *val = &g->values[v];
    cr_assert_eq(val->kind, IR_VALUE_CONST, "value %s was not folded", val->name);
    cr_assert_eq(val->tensor->dtype, dt);
    int64_t got[SHAPE_MAX_KNOWN_ELEMS];
    uint32_t m;
    cr_assert(shape_tensor_ints(val->tensor, got, SHAPE_MAX_KNOWN_ELEMS, &m));
    cr_assert_eq(m, n);
    for (uint32_t i = 0; i < n; i++)
        cr_assert_eq(got[i], expected[i], "element %u: %lld, expected %lld", i,
                     (long long)got[i], (long long)expected[i]);
}

/* LayerNormalization's function body: the reduced shape is Concat(prefix, ones) with the
 * ones from ConstantOfShape(Neg(axis)). */
Test(ir_shape, evaluates_neg_feeding_constant_of_shape_in_layer_norm_bodies) {
    IrGraph *g = ir_graph_new("t");
    uint32_t x = add_input(g, "x", IR_DTYPE_F32, 4, (int64_t[]){2, 3, 4, 5});
    uint32_t y = add_input(g, "y", IR_DTYPE_F32, 2, (int64_t[]){6, 1});
    uint32_t sh = add1(g, IR_OP_SHAPE, (uint32_t[]){x}, 1);
    uint32_t zero = add_const_i64(g, "zero", 1, (int64_t[]){0});
    uint32_t axis = add_const_i64(g, "axis", 1, (int64_t[]){-2});
    uint32_t prefix = add1(g, IR_OP_SLICE, (uint32_t[]){sh, zero, axis}, 3);
    uint32_t nred = add1(g, IR_OP_NEG, (uint32_t[]){axis}, 1);
    uint32_t ones;
    uint32_t n = add_node(g, IR_OP_CONSTANT_OF_SHAPE, (uint32_t[]){nred}, 1, 1, &ones);
    IrAttr *a = ir_node_attr(&g->nodes[n], IR_ATTR_CONSTANT_OF_SHAPE_VALUE);
    a->present = true;
    a->n = 1;
    a->tensors = ir_tensor_new(g->arena, IR_DTYPE_I64, 1, (int64_t[]){1});
    memcpy(a->tensors->data, &(int64_t){1}, sizeof(int64_t));
    uint32_t cat;
    n = add_node(g, IR_OP_CONCAT, (uint32_t[]){prefix, ones}, 2, 1, &cat);
    set_i(g, n, IR_ATTR_CONCAT_AXIS, 0);
    uint32_t r = add1(g, IR_OP_RESHAPE, (uint32_t[]){y, cat}, 2);
    fold_ok(g);
    assert_type(g, ones, "tensor(i64)[2]");
    assert_type(g, r, "tensor(f32)[2,3,1,1]");
    assert_const_ints(g, cat, IR_DTYPE_I64, 4, (int64_t[]){2, 3, 1, 1});
    ir_graph_free(g);
}

/* Attention's grouped-query branch: Div, Mod, Equal, Not, And and Where on head counts
 * choose the interleave factor of an Expand. */
Test(ir_shape, evaluates_integer_logic_on_head_counts_feeding_expand) {
    IrGraph *g = ir_graph_new("t");
    uint32_t q = add_input(g, "q", IR_DTYPE_F32, 3, (int64_t[]){6, 1, 2});
    uint32_t k = add_input(g, "k", IR_DTYPE_F32, 3, (int64_t[]){3, 1, 2});
    uint32_t hq = add1(g, IR_OP_SHAPE, (uint32_t[]){q}, 1);
    uint32_t hk = add1(g, IR_OP_SHAPE, (uint32_t[]){k}, 1);
    uint32_t idx = add_const_i64(g, "idx", 1, (int64_t[]){0});
    hq = add1(g, IR_OP_GATHER, (uint32_t[]){hq, idx}, 2);
    hk = add1(g, IR_OP_GATHER, (uint32_t[]){hk, idx}, 2);
    uint32_t zero = add_const_i64(g, "zero", 1, (int64_t[]){0});
    uint32_t one = add_const_i64(g, "one", 1, (int64_t[]){1});
    uint32_t eq = add1(g, IR_OP_EQUAL, (uint32_t[]){hq, hk}, 2);
    uint32_t ne = add1(g, IR_OP_NOT, (uint32_t[]){eq}, 1);
    uint32_t div = add1(g, IR_OP_DIV, (uint32_t[]){hq, hk}, 2);
    uint32_t mod = add1(g, IR_OP_MOD, (uint32_t[]){hq, hk}, 2);
    uint32_t exact = add1(g, IR_OP_EQUAL, (uint32_t[]){mod, zero}, 2);
    uint32_t cond = add1(g, IR_OP_AND, (uint32_t[]){ne, exact}, 2);
    uint32_t inter = add1(g, IR_OP_WHERE, (uint32_t[]){cond, div, one}, 3);
    uint32_t tail = add_const_i64(g, "tail", 2, (int64_t[]){1, 2});
    uint32_t shape;
    uint32_t n = add_node(g, IR_OP_CONCAT, (uint32_t[]){hk, inter, tail}, 3, 1, &shape);
    set_i(g, n, IR_ATTR_CONCAT_AXIS, 0);
    uint32_t ku = add1(g, IR_OP_UNSQUEEZE, (uint32_t[]){k, one}, 2);
    uint32_t e = add1(g, IR_OP_EXPAND, (uint32_t[]){ku, shape}, 2);
    fold_ok(g);
    assert_type(g, e, "tensor(f32)[3,2,1,2]");
    assert_const_ints(g, cond, IR_DTYPE_BOOL, 1, (int64_t[]){1});
    assert_const_ints(g, inter, IR_DTYPE_I64, 1, (int64_t[]){2});
    ir_graph_free(g);
}

/* Integer Div truncates toward zero (as ONNX Runtime); Mod takes the divisor's sign unless
 * fmod=1; a zero divisor is left to run time. */
Test(ir_shape, evaluates_integer_division_as_onnx_runtime_does) {
    IrGraph *g = ir_graph_new("t");
    uint32_t a = add_const_i64(g, "a", 4, (int64_t[]){-7, 7, -7, 7});
    uint32_t b = add_const_i64(g, "b", 4, (int64_t[]){2, -2, -2, 2});
    uint32_t z = add_const_i64(g, "z", 1, (int64_t[]){0});
    uint32_t div = add1(g, IR_OP_DIV, (uint32_t[]){a, b}, 2);
    uint32_t mod = add1(g, IR_OP_MOD, (uint32_t[]){a, b}, 2);
    uint32_t fmod;
    uint32_t n = add_node(g, IR_OP_MOD, (uint32_t[]){a, b}, 2, 1, &fmod);
    set_i(g, n, IR_ATTR_MOD_FMOD, 1);
    uint32_t by0 = add1(g, IR_OP_DIV, (uint32_t[]){a, z}, 2);
    fold_ok(g);
    assert_const_ints(g, div, IR_DTYPE_I64, 4, (int64_t[]){-3, -3, 3, 3});
    assert_const_ints(g, mod, IR_DTYPE_I64, 4, (int64_t[]){1, -1, -1, 1});
    assert_const_ints(g, fmod, IR_DTYPE_I64, 4, (int64_t[]){-1, 1, -1, 1});
    cr_assert_eq(g->values[by0].kind, IR_VALUE_NODE);
    assert_type(g, by0, "tensor(i64)[4]");
    ir_graph_free(g);
}

/* Attention's scale 1/sqrt(head size) from Cast(Shape): computed in float, as the kernels
 * would, and folded into an f32 constant. */
Test(ir_shape, evaluates_float_scalars_from_shapes_in_float_precision) {
    IrGraph *g = ir_graph_new("t");
    uint32_t x = add_input(g, "x", IR_DTYPE_F32, 2, (int64_t[]){4, 7});
    uint32_t sh;
    uint32_t n = add_node(g, IR_OP_SHAPE, (uint32_t[]){x}, 1, 1, &sh);
    set_i(g, n, IR_ATTR_SHAPE_START, -1);
    uint32_t shf;
    n = add_node(g, IR_OP_CAST, (uint32_t[]){sh}, 1, 1, &shf);
    set_i(g, n, IR_ATTR_CAST_TO, IR_DTYPE_F32);
    uint32_t sq = add1(g, IR_OP_SQRT, (uint32_t[]){shf}, 1);
    float one = 1.0f;
    uint32_t c1 = add_const_scalar(g, "one", IR_DTYPE_F32, &one);
    uint32_t scale = add1(g, IR_OP_DIV, (uint32_t[]){c1, sq}, 2);
    uint32_t y = add1(g, IR_OP_MUL, (uint32_t[]){x, scale}, 2);
    fold_ok(g);
    assert_type(g, y, "tensor(f32)[4,7]");
    const IrValue *v = &g->values[scale];
    cr_assert_eq(v->kind, IR_VALUE_CONST);
    cr_assert_eq(v->tensor->dtype, IR_DTYPE_F32);
    float got, expected = 1.0f / sqrtf(7.0f);
    memcpy(&got, v->tensor->data, sizeof got);
    cr_assert_eq(got, expected, "%.9g, expected %.9g", (double)got, (double)expected);
    cr_assert_eq(g->values[y].kind, IR_VALUE_NODE);
    ir_graph_free(g);
}

/* ReduceProd of a shape slice (flattening exporters), Range with computed bounds, Tile and
 * Cast to int32 of known values. */
Test(ir_shape, evaluates_reductions_ranges_tiles_and_casts_of_known_values) {
    IrGraph *g = ir_graph_new("t");
    uint32_t x = add_input(g, "x", IR_DTYPE_F32, 3, (int64_t[]){2, 3, 4});
    uint32_t sh = add1(g, IR_OP_SHAPE, (uint32_t[]){x}, 1);
    uint32_t axes = add_const_i64(g, "axes", 1, (int64_t[]){0});
    uint32_t prod = add1(g, IR_OP_REDUCE_PROD, (uint32_t[]){sh, axes}, 2);
    uint32_t r = add1(g, IR_OP_RESHAPE, (uint32_t[]){x, prod}, 2);
    uint32_t mx;
    uint32_t n = add_node(g, IR_OP_REDUCE_MAX, (uint32_t[]){sh}, 1, 1, &mx);
    set_i(g, n, IR_ATTR_REDUCE_MAX_KEEPDIMS, 0);
    int64_t zero = 0, step = 2;
    uint32_t c0 = add_const_scalar(g, "zero", IR_DTYPE_I64, &zero);
    uint32_t c2 = add_const_scalar(g, "step", IR_DTYPE_I64, &step);
    uint32_t rng = add1(g, IR_OP_RANGE, (uint32_t[]){c0, mx, c2}, 3);
    uint32_t reps = add_const_i64(g, "reps", 1, (int64_t[]){2});
    uint32_t t = add1(g, IR_OP_TILE, (uint32_t[]){rng, reps}, 2);
    uint32_t t32;
    n = add_node(g, IR_OP_CAST, (uint32_t[]){t}, 1, 1, &t32);
    set_i(g, n, IR_ATTR_CAST_TO, IR_DTYPE_I32);
    uint32_t cs = add1(g, IR_OP_CONSTANT_OF_SHAPE, (uint32_t[]){t32}, 1);
    fold_ok(g);
    assert_type(g, r, "tensor(f32)[24]");
    assert_const_ints(g, mx, IR_DTYPE_I64, 1, (int64_t[]){4});
    assert_const_ints(g, t32, IR_DTYPE_I32, 4, (int64_t[]){0, 2, 0, 2});
    assert_type(g, cs, "tensor(f32)[0,2,0,2]");
    ir_graph_free(g);
}

/* Position ids: Range(0, Gather(Shape(x), 1), 1) over a static sequence longer than the
 * known-value limit still folds into a constant (int64 and int32), and a float range of that
 * length stays a node. */
Test(ir_shape, folds_long_integer_ranges_into_constants) {
    IrGraph *g = ir_graph_new("t");
    uint32_t x = add_input(g, "x", IR_DTYPE_F32, 3, (int64_t[]){1, 200, 8});
    uint32_t sh = add1(g, IR_OP_SHAPE, (uint32_t[]){x}, 1);
    uint32_t idx = add_const_scalar(g, "idx", IR_DTYPE_I64, &(int64_t){1});
    uint32_t len = add1(g, IR_OP_GATHER, (uint32_t[]){sh, idx}, 2);
    uint32_t c0 = add_const_scalar(g, "zero", IR_DTYPE_I64, &(int64_t){0});
    uint32_t c1 = add_const_scalar(g, "one", IR_DTYPE_I64, &(int64_t){1});
    uint32_t ids = add1(g, IR_OP_RANGE, (uint32_t[]){c0, len, c1}, 3);
    uint32_t s32 = add_const_scalar(g, "s32", IR_DTYPE_I32, &(int32_t){-5});
    uint32_t l32 = add_const_scalar(g, "l32", IR_DTYPE_I32, &(int32_t){295});
    uint32_t d32 = add_const_scalar(g, "d32", IR_DTYPE_I32, &(int32_t){3});
    uint32_t r32 = add1(g, IR_OP_RANGE, (uint32_t[]){s32, l32, d32}, 3);
    uint32_t sf = add_const_scalar(g, "sf", IR_DTYPE_F32, &(float){0});
    uint32_t lf = add_const_scalar(g, "lf", IR_DTYPE_F32, &(float){100});
    uint32_t df = add_const_scalar(g, "df", IR_DTYPE_F32, &(float){0.5f});
    uint32_t rf = add1(g, IR_OP_RANGE, (uint32_t[]){sf, lf, df}, 3);
    fold_ok(g);
    const IrValue *v = &g->values[ids];
    cr_assert_eq(v->kind, IR_VALUE_CONST, "the int64 range was not folded");
    cr_assert_eq(v->tensor->dtype, IR_DTYPE_I64);
    cr_assert_eq(v->tensor->n_elems, 200);
    for (int64_t i = 0; i < 200; i++) {
        int64_t got;
        memcpy(&got, (const uint8_t *)v->tensor->data + 8 * i, 8);
        cr_assert_eq(got, i, "element %lld: %lld", (long long)i, (long long)got);
    }
    v = &g->values[r32];
    cr_assert_eq(v->kind, IR_VALUE_CONST, "the int32 range was not folded");
    cr_assert_eq(v->tensor->dtype, IR_DTYPE_I32);
    cr_assert_eq(v->tensor->n_elems, 100);
    for (int64_t i = 0; i < 100; i++) {
        int32_t got;
        memcpy(&got, (const uint8_t *)v->tensor->data + 4 * i, 4);
        cr_assert_eq(got, -5 + 3 * i, "element %lld: %d", (long long)i, got);
    }
    cr_assert_eq(g->values[rf].kind, IR_VALUE_NODE);
    assert_type(g, rf, "tensor(f32)[200]");
    ir_graph_free(g);
}

/* Values computed from graph input data are not known at compile time: the shapes they
 * drive stay unknown, and nothing is folded. */
Test(ir_shape, leaves_shapes_computed_from_input_data_unknown) {
    IrGraph *g = ir_graph_new("t");
    uint32_t x = add_input(g, "x", IR_DTYPE_F32, 2, (int64_t[]){3, 1});
    uint32_t s = add_input(g, "s", IR_DTYPE_I64, 1, (int64_t[]){2});
    uint32_t two = add_const_i64(g, "two", 1, (int64_t[]){2});
    uint32_t s2 = add1(g, IR_OP_MUL, (uint32_t[]){s, two}, 2);
    uint32_t e = add1(g, IR_OP_EXPAND, (uint32_t[]){x, s2}, 2);
    fold_ok(g);
    cr_assert_eq(g->values[s2].kind, IR_VALUE_NODE);
    assert_type(g, e, "tensor(f32)[?,?]");
    ir_graph_free(g);
}

/* A graph input with no elements carries no data: Reduce* function bodies pass their
 * default (empty) axes that way. */
Test(ir_shape, knows_the_value_of_an_input_with_no_elements) {
    IrGraph *g = ir_graph_new("t");
    uint32_t x = add_input(g, "x", IR_DTYPE_F32, 3, (int64_t[]){3, 2, 2});
    uint32_t axes = add_input(g, "axes", IR_DTYPE_I64, 1, (int64_t[]){0});
    uint32_t some = add_input(g, "some", IR_DTYPE_I64, 1, (int64_t[]){1});
    uint32_t all = add1(g, IR_OP_REDUCE_SUM, (uint32_t[]){x, axes}, 2);
    uint32_t unknown = add1(g, IR_OP_REDUCE_SUM, (uint32_t[]){x, some}, 2);
    infer_ok(g);
    assert_type(g, all, "tensor(f32)[1,1,1]");
    assert_type(g, unknown, "tensor(f32)[?,?,?]");
    ir_graph_free(g);
}

/* ---- control flow ---- */

Test(ir_shape, merges_if_branches_into_their_common_type) {
    IrGraph *g = ir_graph_new("t");
    uint32_t cond = add_input(g, "cond", IR_DTYPE_BOOL, 0, NULL);
    uint32_t a = add_input(g, "a", IR_DTYPE_F32, 2, (int64_t[]){2, 3});
    uint32_t b = add_input(g, "b", IR_DTYPE_F32, 2, (int64_t[]){2, 5});
    uint32_t branches[2];
    uint32_t srcs[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        branches[i] = ir_graph_add_subgraph(g, i ? "else" : "then");
        IrGraph *s = g->subgraphs[branches[i]];
        uint32_t outer = ir_value_add(s, "outer", NULL, IR_VALUE_OUTER);
        s->values[outer].producer = srcs[i];
        uint32_t y = add1(s, IR_OP_NEG, (uint32_t[]){outer}, 1);
        ir_graph_add_output(s, y);
    }
    uint32_t out;
    uint32_t n = add_node(g, IR_OP_IF, (uint32_t[]){cond}, 1, 1, &out);
    IrAttr *t = ir_node_attr(&g->nodes[n], IR_ATTR_IF_THEN_BRANCH);
    t->present = true;
    t->n = 1;
    t->graphs = ir_arena_memdup(g->arena, &branches[0], sizeof(uint32_t));
    IrAttr *e = ir_node_attr(&g->nodes[n], IR_ATTR_IF_ELSE_BRANCH);
    e->present = true;
    e->n = 1;
    e->graphs = ir_arena_memdup(g->arena, &branches[1], sizeof(uint32_t));
    infer_ok(g);
    assert_type(g->subgraphs[branches[1]], g->subgraphs[branches[1]]->outputs[0],
                "tensor(f32)[2,5]");
    assert_type(g, out, "tensor(f32)[2,?]");
    ir_graph_free(g);
}

Test(ir_shape, picks_the_if_branch_of_a_condition_known_at_compile_time) {
    IrGraph *g = ir_graph_new("t");
    uint32_t x = add_input(g, "x", IR_DTYPE_F32, 3, (int64_t[]){2, 3, 4});
    uint32_t a = add_input(g, "a", IR_DTYPE_F32, 2, (int64_t[]){2, 3});
    uint32_t b = add_input(g, "b", IR_DTYPE_F32, 2, (int64_t[]){2, 5});
    /* cond = Size(Shape(x)) == 3 */
    uint32_t rank = add1(g, IR_OP_SIZE, (uint32_t[]){add1(g, IR_OP_SHAPE, (uint32_t[]){x}, 1)}, 1);
    int64_t three = 3;
    uint32_t c3 = add_const_scalar(g, "three", IR_DTYPE_I64, &three);
    uint32_t cond = add1(g, IR_OP_EQUAL, (uint32_t[]){rank, c3}, 2);
    uint32_t branches[2];
    uint32_t srcs[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        branches[i] = ir_graph_add_subgraph(g, i ? "else" : "then");
        IrGraph *s = g->subgraphs[branches[i]];
        uint32_t outer = ir_value_add(s, "outer", NULL, IR_VALUE_OUTER);
        s->values[outer].producer = srcs[i];
        ir_graph_add_output(s, add1(s, IR_OP_NEG, (uint32_t[]){outer}, 1));
    }
    uint32_t out;
    uint32_t n = add_node(g, IR_OP_IF, (uint32_t[]){cond}, 1, 1, &out);
    IrAttr *t = ir_node_attr(&g->nodes[n], IR_ATTR_IF_THEN_BRANCH);
    t->present = true;
    t->n = 1;
    t->graphs = ir_arena_memdup(g->arena, &branches[0], sizeof(uint32_t));
    IrAttr *e = ir_node_attr(&g->nodes[n], IR_ATTR_IF_ELSE_BRANCH);
    e->present = true;
    e->n = 1;
    e->graphs = ir_arena_memdup(g->arena, &branches[1], sizeof(uint32_t));
    infer_ok(g);
    assert_type(g, out, "tensor(f32)[2,3]");
    ir_graph_free(g);
}

Test(ir_shape, types_loop_bodies_from_the_node_and_stacks_scan_outputs) {
    IrGraph *g = ir_graph_new("t");
    uint32_t m = add_input(g, "M", IR_DTYPE_I64, 0, NULL);
    uint32_t x = add_input(g, "x", IR_DTYPE_F32, 1, (int64_t[]){4});
    uint32_t bi = ir_graph_add_subgraph(g, "body");
    IrGraph *b = g->subgraphs[bi];
    uint32_t it = ir_value_add(b, "i", NULL, IR_VALUE_INPUT);
    uint32_t cin = ir_value_add(b, "cond_in", NULL, IR_VALUE_INPUT);
    uint32_t acc = ir_value_add(b, "acc", NULL, IR_VALUE_INPUT);
    ir_graph_add_input(b, it);
    ir_graph_add_input(b, cin);
    ir_graph_add_input(b, acc);
    uint32_t cout = add1(b, IR_OP_IDENTITY, (uint32_t[]){cin}, 1);
    uint32_t acc2 = add1(b, IR_OP_ADD, (uint32_t[]){acc, acc}, 2);
    uint32_t scan = add1(b, IR_OP_CAST, (uint32_t[]){acc2}, 1);
    set_i(b, 2, IR_ATTR_CAST_TO, IR_DTYPE_F64);
    ir_graph_add_output(b, cout);
    ir_graph_add_output(b, acc2);
    ir_graph_add_output(b, scan);
    uint32_t outs[2];
    uint32_t n = add_node(g, IR_OP_LOOP, (uint32_t[]){m, IR_NONE, x}, 3, 2, outs);
    IrAttr *a = ir_node_attr(&g->nodes[n], IR_ATTR_LOOP_BODY);
    a->present = true;
    a->n = 1;
    a->graphs = ir_arena_memdup(g->arena, &bi, sizeof bi);
    infer_ok(g);
    assert_type(b, it, "tensor(i64)[]");
    assert_type(b, cin, "tensor(bool)[]");
    /* loop-carried values may change shape between iterations: only the rank is kept */
    assert_type(b, acc, "tensor(f32)[?]");
    assert_type(g, outs[0], "tensor(f32)[?]");
    assert_type(g, outs[1], "tensor(f64)[?,?]");
    ir_graph_free(g);
}
