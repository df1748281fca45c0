/* Unit tests of the ONNX frontend (frontend/): fixture models from
 * tests/data/frontend/make_fixtures.py, external data and its refusals (links are made in
 * a fresh temporary folder), and malformed buffers built here. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontend/onnx.h"
#include "ir/open_dims.h"

#define FIXTURES KILN_SOURCE_DIR "/tests/data/frontend/"
#define TEST_MAX_PATH 512
#define TEST_MAX_DIR 64 /* mkdtemp folders under /tmp */

static Diag diag;

static void setup(void) { diag_init(&diag); }
static void teardown(void) { diag_free(&diag); }

static IrGraph *load(const char *name, const OnnxLoadOptions *opts) {
    char path[TEST_MAX_PATH];
    snprintf(path, sizeof path, FIXTURES "%s", name);
    return onnx_load_file(path, opts, &diag);
}

/* True when some diagnostic contains text. */
static bool diag_says(const char *text) {
    for (unsigned i = 0; i < diag.n_msgs; i++)
        if (strstr(diag.msgs[i].text, text)) return true;
    return false;
}

static uint32_t value_named(const IrGraph *g, const char *name) {
    for (uint32_t v = 0; v < g->n_values; v++)
        if (strcmp(g->values[v].name, name) == 0) return v;
    return IR_NONE;
}

static const IrAttr *unknown_attr(const IrNode *n, const char *name) {
    for (uint32_t i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

static uint8_t *read_all(const char *name, size_t *len) {
    char path[TEST_MAX_PATH];
    snprintf(path, sizeof path, FIXTURES "%s", name);
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n + 1);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

TestSuite(onnx_load, .init = setup, .fini = teardown);

Test(onnx_load, reads_a_conv_net_with_raw_and_typed_initializers) {
    IrGraph *g = load("conv_net.onnx", NULL);
    cr_assert(g, "%s", diag.n_msgs ? diag.msgs[0].text : "");
    cr_assert_str_eq(g->producer_name, "kiln-fixtures");
    cr_assert_eq(ir_graph_opset(g, "ai.onnx"), 17);
    cr_assert_eq(g->n_inputs, 2);
    cr_assert_eq(g->n_nodes, 3);
    const IrNode *conv = &g->nodes[0];
    cr_assert_eq(conv->op, IR_OP_CONV);
    cr_assert_eq(conv->opset, 17);
    uint32_t n_pads;
    const int64_t *pads = ir_attr_ints(conv, IR_ATTR_CONV_PADS, &n_pads);
    cr_assert_eq(n_pads, 4);
    cr_assert_eq(pads[3], 1);
    cr_assert(!ir_attr_present(conv, IR_ATTR_CONV_GROUP));

    const IrValue *x = &g->values[g->inputs[0]];
    cr_assert_eq(x->kind, IR_VALUE_INPUT);
    cr_assert_eq(x->type.rank, 4);
    cr_assert_str_eq(ir_graph_sym_name(g, x->type.syms[0]), "batch");
    cr_assert_eq(x->type.dims[0], IR_DIM_UNKNOWN);
    cr_assert_eq(x->type.dims[3], 4);

    const IrValue *scale = &g->values[g->inputs[1]];
    cr_assert_eq(scale->kind, IR_VALUE_INPUT);
    cr_assert(scale->tensor);
    cr_assert_float_eq(((const float *)scale->tensor->data)[0], 2.0f, 0);

    const IrValue *w = &g->values[value_named(g, "W")];
    cr_assert_eq(w->kind, IR_VALUE_CONST);
    cr_assert_eq(w->tensor->n_elems, 18);
    cr_assert_float_eq(((const float *)w->tensor->data)[17], 8.0f, 0);
    const IrValue *b = &g->values[value_named(g, "B")];
    cr_assert_float_eq(((const float *)b->tensor->data)[1], -0.25f, 0);

    const uint8_t *i8 = g->values[value_named(g, "I8")].tensor->data;
    cr_assert(i8[0] == 0xff && i8[1] == 2 && i8[2] == 0x80);
    const uint8_t *f16 = g->values[value_named(g, "F16")].tensor->data;
    cr_assert(f16[0] == 0x00 && f16[1] == 0x3c && f16[2] == 0x00 && f16[3] == 0xc0);
    const IrTensor *i4 = g->values[value_named(g, "I4")].tensor;
    cr_assert_eq(i4->size_bytes, 2);
    cr_assert_eq(((const uint8_t *)i4->data)[0], 0xe1); /* 1, then -2 in the high nibble */
    cr_assert_eq(((const uint8_t *)i4->data)[1], 0x07);
    const int64_t *i64 = g->values[value_named(g, "I64")].tensor->data;
    cr_assert(i64[0] == -5 && i64[1] == (1LL << 40));
    const IrTensor *s = g->values[value_named(g, "S")].tensor;
    cr_assert_eq(s->strings[1].len, 3);
    cr_assert_str_eq(s->strings[1].data, "xyz");
    const IrTensor *sp = g->values[value_named(g, "SP")].tensor;
    const float want[6] = {0, 3, 0, 0, 4, 0};
    cr_assert_eq(sp->n_elems, 6);
    cr_assert_arr_eq(sp->data, want, sizeof want);

    const IrValue *c = &g->values[value_named(g, "c")]; /* typed by value_info */
    cr_assert_eq(c->kind, IR_VALUE_NODE);
    cr_assert_eq(c->type.dtype, IR_DTYPE_F32);
    cr_assert_eq(c->type.dims[1], 2);
    ir_graph_free(g);
}

Test(onnx_load, fixes_symbolic_dims_from_the_options) {
    OnnxDimOverride dims[] = {{"batch", 8}};
    OnnxLoadOptions opts = {.dims = dims, .n_dims = 1, .infer_shapes = false};
    IrGraph *g = load("conv_net.onnx", &opts);
    cr_assert(g);
    const IrValue *x = &g->values[g->inputs[0]];
    cr_assert_eq(x->type.dims[0], 8);
    cr_assert_eq(x->type.syms[0], 0);
    cr_assert_eq(g->values[g->outputs[0]].type.dims[0], 8);
    ir_graph_free(g);
}

/* open_dims.onnx: x [-1, 3, (empty), w], m [w, 2]. */
Test(onnx_load, loads_negative_and_unnamed_input_dims_as_open_symbols) {
    IrGraph *g = load("open_dims.onnx", NULL);
    cr_assert(g, "%s", diag.n_msgs ? diag.msgs[0].text : "");
    const IrType *x = &g->values[g->inputs[0]].type;
    cr_assert_eq(x->rank, 4);
    cr_assert(x->dims[0] < 0 && x->dims[2] < 0 && x->dims[3] < 0);
    cr_assert_str_eq(ir_graph_sym_name(g, x->syms[0]), "x[0]");
    cr_assert_eq(x->dims[1], 3);
    cr_assert_str_eq(ir_graph_sym_name(g, x->syms[2]), "x[2]");
    cr_assert_str_eq(ir_graph_sym_name(g, x->syms[3]), "w");
    IrOpenDim *open;
    cr_assert_eq(ir_open_dims(g, &open), 4); /* x: axes 0, 2, 3; m: axis 0 */
    cr_assert(!open[0].named && !open[1].named && open[2].named && open[3].named);
    cr_assert_eq(open[3].input, 1);
    free(open);
    Diag d;
    diag_init(&d);
    cr_assert_eq(ir_report_open_dims(g, &d), 4);
    cr_assert_eq(d.n_errors, 1); /* one error for them all */
    cr_assert(strstr(d.msgs[0].text, "--dim w=N"), "%s", d.msgs[0].text);
    cr_assert(strstr(d.msgs[0].text, "--shape x=D0x3xD2xD3"), "%s", d.msgs[0].text);
    diag_free(&d);
    ir_graph_free(g);
}

Test(onnx_load, a_shape_override_fixes_open_axes_and_binds_the_inputs_symbols) {
    OnnxShapeOverride shapes[] = {{"x", 4, {2, 3, 5, 7}}};
    uint32_t bad = 0;
    OnnxLoadOptions opts = {.infer_shapes = true, .shapes = shapes, .n_shapes = 1,
                            .n_override_errors = &bad};
    IrGraph *g = load("open_dims.onnx", &opts);
    cr_assert(g, "%s", diag.n_msgs ? diag.msgs[0].text : "");
    const IrType *x = &g->values[g->inputs[0]].type, *m = &g->values[g->inputs[1]].type;
    cr_assert(x->dims[0] == 2 && x->dims[1] == 3 && x->dims[2] == 5 && x->dims[3] == 7);
    cr_assert(m->dims[0] == 7 && m->dims[1] == 2, "w is bound for m too");
    cr_assert(ir_type_is_static(&g->values[g->outputs[0]].type));
    cr_assert_eq(bad, 0);
    ir_graph_free(g);
}

Test(onnx_load, a_dim_override_fixes_an_open_axis_by_its_name) {
    OnnxDimOverride dims[] = {{"x[2]", 9}, {"w", 4}};
    OnnxLoadOptions opts = {.dims = dims, .n_dims = 2};
    IrGraph *g = load("open_dims.onnx", &opts);
    cr_assert(g, "%s", diag.n_msgs ? diag.msgs[0].text : "");
    const IrType *x = &g->values[g->inputs[0]].type;
    cr_assert(x->dims[0] < 0 && x->dims[2] == 9 && x->dims[3] == 4);
    ir_graph_free(g);
}

/* Each override the model cannot take is an error, counted apart from model errors. */
Test(onnx_load, refuses_overrides_the_model_cannot_take) {
    static const struct {
        OnnxDimOverride dim;
        OnnxShapeOverride shape;
        const char *says;
    } cases[] = {
        {{"nope", 1}, {NULL, 0, {0}}, "dimension 'nope' is not a symbolic dimension"},
        {{NULL, 0}, {"q", 1, {1}}, "the model has no input 'q' (its inputs: 'x', 'm')"},
        {{NULL, 0}, {"x", 3, {1, 3, 5}}, "input 'x' has rank 4, the shape gives 3 dims"},
        {{NULL, 0}, {"x", 4, {1, 4, 5, 6}}, "axis 1 of input 'x' is 3 in the model"},
        {{"w", 6}, {"x", 4, {1, 3, 5, 7}}, "set to 6 by a dimension override; this shape says 7"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint32_t bad = 0;
        OnnxLoadOptions opts = {.dims = &cases[i].dim, .n_dims = cases[i].dim.name != NULL,
                                .shapes = &cases[i].shape,
                                .n_shapes = cases[i].shape.input != NULL,
                                .n_override_errors = &bad};
        diag_free(&diag);
        diag_init(&diag);
        IrGraph *g = load("open_dims.onnx", &opts);
        cr_assert_null(g, "case %zu loaded", i);
        cr_assert_eq(bad, 1, "case %zu: %u override errors", i, bad);
        cr_assert(diag_says(cases[i].says), "case %zu: %s", i, diag.n_msgs ? diag.msgs[0].text : "");
    }
}

Test(onnx_load, sorts_nodes_and_keeps_unknown_ops_by_name) {
    IrGraph *g = load("unsorted_unknown.onnx", NULL);
    cr_assert(g, "%s", diag.n_msgs ? diag.msgs[0].text : "");
    cr_assert_eq(g->n_nodes, 2);
    const IrNode *first = &g->nodes[0];
    cr_assert_eq(first->op, IR_OP_UNKNOWN);
    cr_assert_str_eq(first->op_type, "Frobnicate");
    cr_assert_str_eq(first->domain, "com.example");
    cr_assert_eq(first->opset, 3);
    cr_assert_eq(first->inputs[1], IR_NONE);
    const IrAttr *gain = unknown_attr(first, "gain");
    cr_assert(gain && gain->kind == IR_ATTR_KIND_FLOAT);
    cr_assert_float_eq(gain->f, 1.5f, 0);
    const IrAttr *modes = unknown_attr(first, "modes");
    cr_assert(modes && modes->kind == IR_ATTR_KIND_STRINGS && modes->n == 2);
    cr_assert_str_eq(modes->strings[1].data, "b");
    cr_assert_eq(g->nodes[1].op, IR_OP_RELU);
    cr_assert_eq(g->nodes[1].inputs[0], first->outputs[0]);
    cr_assert(!diag_has_errors(&diag));
    ir_graph_free(g);
}

Test(onnx_load, turns_if_branches_into_subgraphs_with_outer_values) {
    IrGraph *g = load("if_outer.onnx", NULL);
    cr_assert(g, "%s", diag.n_msgs ? diag.msgs[0].text : "");
    const IrNode *n = &g->nodes[0];
    cr_assert_eq(n->op, IR_OP_IF);
    const IrAttr *then_a = ir_node_attr(n, IR_ATTR_IF_THEN_BRANCH);
    cr_assert(then_a->present && then_a->n == 1);
    const IrGraph *then_g = g->subgraphs[then_a->graphs[0]];
    cr_assert_eq(then_g->parent, g);
    cr_assert_eq(then_g->n_nodes, 1);
    const IrNode *add = &then_g->nodes[0];
    const IrValue *x = &then_g->values[add->inputs[0]];
    const IrValue *cst = &then_g->values[add->inputs[1]];
    cr_assert_eq(x->kind, IR_VALUE_OUTER);
    cr_assert_eq(x->producer, value_named(g, "X"));
    cr_assert_eq(cst->kind, IR_VALUE_OUTER);
    cr_assert_eq(cst->producer, value_named(g, "C"));
    cr_assert_eq(then_g->n_outputs, 1);
    ir_graph_free(g);
}

Test(onnx_load, inlines_model_local_functions_with_attribute_references) {
    IrGraph *g = load("local_function.onnx", NULL);
    cr_assert(g, "%s", diag.n_msgs ? diag.msgs[0].text : "");
    cr_assert_eq(g->n_nodes, 6);
    cr_assert_eq(g->nodes[0].op, IR_OP_CONSTANT);
    cr_assert_str_eq(g->nodes[0].name, "call1/k");
    cr_assert_float_eq(ir_attr_f(&g->nodes[0], IR_ATTR_CONSTANT_VALUE_FLOAT), 0.5f, 0);
    cr_assert_float_eq(ir_attr_f(&g->nodes[3], IR_ATTR_CONSTANT_VALUE_FLOAT), 3.0f, 0);
    uint32_t h = value_named(g, "h");
    cr_assert_neq(h, IR_NONE);
    cr_assert_str_eq(g->nodes[g->values[h].producer].name, "call1/add");
    cr_assert_eq(g->nodes[4].inputs[0], h); /* call2/mul reads call1's output */
    cr_assert_eq(g->nodes[4].inputs[1], g->nodes[3].outputs[0]);
    cr_assert_neq(value_named(g, "call1/m"), IR_NONE);
    cr_assert_neq(value_named(g, "call2/m"), IR_NONE);
    cr_assert_str_eq(g->values[g->outputs[0]].name, "Y");
    ir_graph_free(g);
}

/* ---- external data ---- */

/* A fresh folder holding a copy of model (as model.onnx) and weights.bin. */
static void stage(char *dir, size_t dir_len, const char *model) {
    snprintf(dir, dir_len, "/tmp/kiln_fe_XXXXXX");
    cr_assert(mkdtemp(dir));
    const char *names[2] = {model, "weights.bin"};
    const char *dest[2] = {"model.onnx", "weights.bin"};
    for (int i = 0; i < 2; i++) {
        size_t len;
        uint8_t *buf = read_all(names[i], &len);
        char path[TEST_MAX_PATH];
        snprintf(path, sizeof path, "%s/%s", dir, dest[i]);
        FILE *f = fopen(path, "wb");
        cr_assert(f);
        fwrite(buf, 1, len, f);
        fclose(f);
        free(buf);
    }
}

static IrGraph *load_staged(const char *dir) {
    char path[TEST_MAX_PATH];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    return onnx_load_file(path, NULL, &diag);
}

static void unstage(const char *dir) {
    const char *names[] = {"model.onnx", "weights.bin", "link.bin", "hard.bin"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[TEST_MAX_PATH];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

Test(onnx_load, reads_external_data_next_to_the_model) {
    char dir[TEST_MAX_DIR];
    stage(dir, sizeof dir, "ext_ok.onnx");
    IrGraph *g = load_staged(dir);
    cr_assert(g, "%s", diag.n_msgs ? diag.msgs[0].text : "");
    const IrTensor *t = g->values[value_named(g, "E")].tensor;
    const float want[4] = {1, 2, 3, 4};
    cr_assert_arr_eq(t->data, want, sizeof want);
    ir_graph_free(g);
    unstage(dir);
}

static void expect_refused(const char *model, const char *link_name, bool hard, const char *why) {
    char dir[TEST_MAX_DIR], target[TEST_MAX_PATH], path[TEST_MAX_PATH];
    stage(dir, sizeof dir, model);
    if (link_name) {
        snprintf(target, sizeof target, "%s/weights.bin", dir);
        snprintf(path, sizeof path, "%s/%s", dir, link_name);
        cr_assert_eq(hard ? link(target, path) : symlink(target, path), 0);
    }
    IrGraph *g = load_staged(dir);
    cr_assert_null(g);
    cr_assert(diag_says(why), "expected '%s', got '%s'", why,
              diag.n_msgs ? diag.msgs[0].text : "(nothing)");
    cr_assert(diag_says("initializer 'E'"));
    unstage(dir);
}

Test(onnx_load, refuses_an_absolute_external_path) {
    expect_refused("ext_absolute.onnx", NULL, false, "is absolute");
}

Test(onnx_load, refuses_an_external_path_with_dotdot) {
    expect_refused("ext_dotdot.onnx", NULL, false, "leaves the model's folder");
}

Test(onnx_load, refuses_external_data_through_a_symlink) {
    expect_refused("ext_symlink.onnx", "link.bin", false, "symbolic link");
}

Test(onnx_load, refuses_external_data_through_a_hardlink) {
    expect_refused("ext_hardlink.onnx", "hard.bin", true, "hard links");
}

Test(onnx_load, refuses_an_external_offset_past_the_end) {
    expect_refused("ext_offset.onnx", NULL, false, "past the end");
}

Test(onnx_load, refuses_external_data_from_memory_without_a_folder) {
    size_t len;
    uint8_t *buf = read_all("ext_ok.onnx", &len);
    cr_assert_null(onnx_load_buffer(buf, len, NULL, NULL, &diag));
    cr_assert(diag_says("external data is refused"));
    free(buf);
}

/* ---- malformed models ---- */

static void expect_error(const char *model, const char *text) {
    IrGraph *g = load(model, NULL);
    cr_assert_null(g, "%s loaded", model);
    cr_assert(diag_says(text), "%s: expected '%s', got '%s'", model, text,
              diag.n_msgs ? diag.msgs[0].text : "(nothing)");
}

Test(onnx_load, names_the_node_of_an_attribute_the_op_does_not_have) {
    expect_error("bad_attr_name.onnx", "node 'r' (Relu, opset 17): attribute 'bogus'");
}

Test(onnx_load, names_the_node_of_an_attribute_of_the_wrong_kind) {
    expect_error("bad_attr_kind.onnx", "node 'sm' (Softmax, opset 17): attribute 'axis'");
}

Test(onnx_load, refuses_a_value_defined_twice) {
    expect_error("bad_dup_output.onnx", "node 'b' (Relu, opset 17): output 'Y' is already");
}

Test(onnx_load, refuses_a_cycle) { expect_error("bad_cycle.onnx", "part of a cycle"); }

Test(onnx_load, refuses_an_undefined_input) {
    expect_error("bad_undefined.onnx", "node 'u' (Add, opset 17): input 'nope' is not defined");
}

Test(onnx_load, refuses_a_domain_the_model_does_not_import) {
    expect_error("bad_domain.onnx", "domain 'com.missing' is not imported");
}

Test(onnx_load, refuses_bad_tensors_naming_tensor_and_field) {
    expect_error("bad_raw_size.onnx", "initializer 'R': raw_data has 12 bytes");
    expect_error("bad_typed_count.onnx", "initializer 'T': field int64_data has 2 values");
    expect_error("bad_dtype.onnx", "initializer 'D': unknown data_type 99");
    expect_error("bad_negative_dim.onnx", "initializer 'N': dimension 0 is negative");
    expect_error("bad_huge.onnx", "initializer 'H': more than");
    expect_error("bad_rank.onnx", "rank 9 exceeds");
}

Test(onnx_load, refuses_every_truncation_of_a_model_without_crashing) {
    size_t len;
    uint8_t *buf = read_all("conv_net.onnx", &len);
    for (size_t cut = 1; cut < len; cut++) {
        uint8_t *part = malloc(cut); /* exact size, so ASan sees any overread */
        memcpy(part, buf, cut);
        IrGraph *g = onnx_load_buffer(part, cut, NULL, NULL, &diag);
        /* a cut between fields can leave a valid shorter model; it must then be whole */
        if (g)
            ir_graph_free(g);
        else
            cr_assert(diag_has_errors(&diag), "cut %zu: NULL without a diagnostic", cut);
        free(part);
        diag_free(&diag);
        diag_init(&diag);
    }
    free(buf);
}

Test(onnx_load, refuses_garbage) {
    srand(12345);
    for (int round = 0; round < 200; round++) {
        size_t len = 1 + (size_t)(rand() % 300);
        uint8_t *buf = malloc(len);
        for (size_t i = 0; i < len; i++)
            buf[i] = (uint8_t)rand();
        IrGraph *g = onnx_load_buffer(buf, len, NULL, NULL, &diag);
        if (!g) cr_assert(diag_has_errors(&diag));
        ir_graph_free(g);
        free(buf);
        diag_free(&diag);
        diag_init(&diag);
    }
}

/* Appends a length-delimited field (tag, length, payload) in front of nothing: builds the
 * message inside out. Returns the new length. */
static size_t wrap(uint8_t *buf, size_t len, size_t cap, unsigned field) {
    uint8_t head[16];
    size_t h = 0;
    head[h++] = (uint8_t)(field << 3 | 2);
    size_t v = len;
    do {
        head[h++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    cr_assert(len + h <= cap);
    memmove(buf + h, buf, len);
    memcpy(buf, head, h);
    return len + h;
}

Test(onnx_load, refuses_a_nesting_bomb_before_unpacking) {
    enum { LEVELS = 2000, CAP = 64 * LEVELS };
    uint8_t *buf = calloc(CAP, 1);
    size_t len = 0;
    for (int i = 0; i < LEVELS; i++) {
        len = wrap(buf, len, CAP, 6); /* AttributeProto.g */
        len = wrap(buf, len, CAP, 5); /* NodeProto.attribute */
        len = wrap(buf, len, CAP, 1); /* GraphProto.node */
    }
    len = wrap(buf, len, CAP, 7); /* ModelProto.graph */
    cr_assert_null(onnx_load_buffer(buf, len, NULL, NULL, &diag));
    cr_assert(diag_says("nested deeper"));
    free(buf);
}

Test(onnx_load, refuses_a_missing_file) {
    cr_assert_null(load("no_such_model.onnx", NULL));
    cr_assert(diag_has_errors(&diag));
}
