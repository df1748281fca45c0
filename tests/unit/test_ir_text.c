/* Unit tests of the IR text form (ir/text_print.c, ir/text_parse.c): graphs built in C
 * print, parse back and print the same bytes; hostile text gets diagnostics, not crashes;
 * the golden files in tests/golden/text are fixed points of parse-then-print. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ir/ir.h"

static const IrPrintOpts FULL = {true};

static char *print_full(const IrGraph *g) { return ir_print_to_string(g, &FULL); }

static char *diag_text(const Diag *d) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    diag_print(d, f, "");
    fclose(f);
    return buf;
}

/* Parses text; fails the test with the diagnostics when it does not parse. */
static IrGraph *parse_ok(const char *text) {
    Diag d;
    diag_init(&d);
    IrGraph *g = ir_parse(text, strlen(text), &d);
    if (!g) {
        char *msg = diag_text(&d);
        cr_log_error("text:\n%s\ndiagnostics:\n%s", text, msg);
        free(msg);
    }
    cr_assert_not_null(g);
    diag_free(&d);
    return g;
}

/* print(parse(print(g))) == print(g); returns the parsed graph (caller frees). */
static IrGraph *round_trip(const IrGraph *g) {
    char *t1 = print_full(g);
    IrGraph *g2 = parse_ok(t1);
    char *t2 = print_full(g2);
    if (strcmp(t1, t2) != 0) cr_log_error("first print:\n%s\nsecond print:\n%s", t1, t2);
    cr_assert_str_eq(t1, t2);
    free(t1);
    free(t2);
    return g2;
}

/* The first diagnostic of parsing text, which must fail. */
static char *parse_error(const char *text, size_t len) {
    Diag d;
    diag_init(&d);
    IrGraph *g = ir_parse(text, len, &d);
    cr_assert_null(g, "expected a parse error for:\n%.*s", (int)len, text);
    cr_assert(diag_has_errors(&d));
    char *msg = strdup(d.msgs[0].text);
    diag_free(&d);
    return msg;
}

static uint32_t add_tensor_value(IrGraph *g, const char *name, IrDType dt, int rank,
                                 const int64_t *dims, IrValueKind kind) {
    IrType t = ir_type_tensor(dt, rank, dims);
    return ir_value_add(g, name, &t, kind);
}

static void fill_random(void *p, size_t n) {
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(rand() >> 7);
}

static uint32_t add_const(IrGraph *g, const char *name, IrDType dt, int rank, const int64_t *dims) {
    uint32_t v = add_tensor_value(g, name, dt, rank, dims, IR_VALUE_CONST);
    IrTensor *t = ir_tensor_new(g->arena, dt, rank, dims);
    t->name = g->values[v].name;
    if (dt == IR_DTYPE_STRING) {
        for (int64_t i = 0; i < t->n_elems; i++) {
            char buf[32];
            int len = snprintf(buf, sizeof buf, "s%d\"\\\n\x01\xff", rand() % 1000);
            t->strings[i] = (IrStr){ir_arena_strndup(g->arena, buf, (size_t)len), (size_t)len};
        }
    } else {
        fill_random(t->data, t->size_bytes);
    }
    g->values[v].tensor = t;
    return v;
}

/* One node of op with n_in inputs and results named by outs (NULL entries: omitted). */
static uint32_t add_node(IrGraph *g, IrOp op, const char *name, const uint32_t *ins,
                         uint32_t n_in, const char *const *outs, uint32_t n_out,
                         const IrType *out_type) {
    uint32_t id = ir_node_add(g, op, name, n_in, n_out, 0);
    for (uint32_t i = 0; i < n_in; i++) g->nodes[id].inputs[i] = ins[i];
    for (uint32_t i = 0; i < n_out; i++) {
        if (!outs[i]) continue;
        uint32_t v = ir_value_add(g, outs[i], out_type, IR_VALUE_NODE);
        g->values[v].producer = id;
        g->values[v].result_index = i;
        g->nodes[id].outputs[i] = v;
    }
    g->nodes[id].opset = (int32_t)ir_graph_opset(g, g->nodes[id].domain);
    return id;
}

static IrGraph *new_model(const char *name) {
    IrGraph *g = ir_graph_new(name);
    g->ir_version = 8;
    g->producer_name = "pytorch";
    g->producer_version = "2.1";
    ir_graph_set_opset(g, "", 17);
    ir_graph_set_opset(g, "ai.onnx.ml", 3);
    return g;
}

/* ---- printing ---------------------------------------------------------------------- */

Test(ir_text, prints_a_small_conv_graph_in_the_documented_form) {
    IrGraph *g = new_model("main");
    int64_t xd[4] = {IR_DIM_UNKNOWN, 1, 2, 2}, wd[4] = {1, 1, 1, 1};
    IrType xt = ir_type_tensor(IR_DTYPE_F32, 4, xd);
    xt.syms[0] = ir_graph_sym(g, "N");
    uint32_t x = ir_value_add(g, "x", &xt, IR_VALUE_INPUT);
    ir_graph_add_input(g, x);
    uint32_t w = add_tensor_value(g, "w", IR_DTYPE_F32, 4, wd, IR_VALUE_CONST);
    IrTensor *wt = ir_tensor_new(g->arena, IR_DTYPE_F32, 4, wd);
    float one = 1.0f;
    memcpy(wt->data, &one, 4);
    g->values[w].tensor = wt;
    const char *outs[] = {"y"};
    uint32_t ins[] = {x, w, IR_NONE};
    uint32_t n = add_node(g, IR_OP_CONV, "conv1", ins, 3, outs, 1, &xt);
    IrAttr *grp = ir_node_attr(&g->nodes[n], IR_ATTR_CONV_GROUP);
    grp->present = true;
    grp->i = 1;
    IrAttr *st = ir_node_attr(&g->nodes[n], IR_ATTR_CONV_STRIDES);
    st->present = true;
    st->n = 2;
    st->ints = ir_arena_alloc(g->arena, 2 * sizeof(int64_t));
    st->ints[0] = st->ints[1] = 1;
    ir_graph_add_output(g, g->nodes[n].outputs[0]);
    char *text = print_full(g);
    const char *want = "kiln-ir 1\n"
                       "model ir_version=8 producer=\"pytorch\" producer_version=\"2.1\"\n"
                       "opset \"\"=17, ai.onnx.ml=3\n"
                       "symbols N\n"
                       "graph main {\n"
                       "  input %x : f32[N,1,2,2]\n"
                       "  const %w : f32[1,1,1,1] = hex\"0000803f\"\n"
                       "  %y : f32[N,1,2,2] = Conv(%x, %w, _) name=conv1 {group=1, "
                       "strides=[1, 1]}\n"
                       "  output %y\n"
                       "}\n";
    cr_assert_str_eq(text, want);
    free(text);
    ir_graph_free(round_trip(g));
    ir_graph_free(g);
}

Test(ir_text, prints_the_same_bytes_twice_and_skips_dead_nodes) {
    IrGraph *g = new_model("m");
    int64_t d[1] = {4};
    uint32_t x = add_tensor_value(g, "x", IR_DTYPE_F32, 1, d, IR_VALUE_INPUT);
    ir_graph_add_input(g, x);
    IrType t = ir_type_tensor(IR_DTYPE_F32, 1, d);
    const char *o1[] = {"dead_out"}, *o2[] = {"y"};
    uint32_t dead = add_node(g, IR_OP_RELU, "gone", &x, 1, o1, 1, &t);
    uint32_t live = add_node(g, IR_OP_NEG, "kept", &x, 1, o2, 1, &t);
    g->nodes[dead].dead = true;
    ir_graph_add_output(g, g->nodes[live].outputs[0]);
    char *a = print_full(g), *b = print_full(g);
    cr_assert_str_eq(a, b);
    cr_assert_null(strstr(a, "gone"));
    cr_assert_null(strstr(a, "dead_out"));
    cr_assert_not_null(strstr(a, "Neg(%x) name=kept"));
    free(a);
    free(b);
    ir_graph_free(round_trip(g));
    ir_graph_free(g);
}

/* ---- round trips of graphs built in C ---------------------------------------------- */

Test(ir_text, round_trips_constants_of_every_dtype) {
    srand((unsigned)time(NULL));
    IrGraph *g = new_model("dtypes");
    int64_t dims[3] = {2, 3, 5};
    for (int dt = 0; dt < IR_DTYPE_COUNT; dt++) {
        char name[32];
        snprintf(name, sizeof name, "c_%s", ir_dtype_name((IrDType)dt));
        uint32_t v = add_const(g, name, (IrDType)dt, 3, dims);
        ir_graph_add_output(g, v);
        snprintf(name, sizeof name, "s_%s", ir_dtype_name((IrDType)dt)); /* rank 0 */
        ir_graph_add_output(g, add_const(g, name, (IrDType)dt, 0, NULL));
    }
    int64_t zero[2] = {0, 7};
    ir_graph_add_output(g, add_const(g, "empty", IR_DTYPE_F32, 2, zero));
    IrGraph *g2 = round_trip(g);
    /* the data itself came back, byte for byte */
    cr_assert_eq(g2->n_values, g->n_values);
    for (uint32_t v = 0; v < g->n_values; v++) {
        const IrTensor *a = g->values[v].tensor, *b = g2->values[v].tensor;
        cr_assert_str_eq(g2->values[v].name, g->values[v].name);
        cr_assert(ir_type_equal(&g->values[v].type, &g2->values[v].type));
        cr_assert_eq(a->n_elems, b->n_elems);
        if (a->dtype == IR_DTYPE_STRING) {
            for (int64_t i = 0; i < a->n_elems; i++) {
                cr_assert_eq(a->strings[i].len, b->strings[i].len);
                cr_assert_eq(memcmp(a->strings[i].data, b->strings[i].data, a->strings[i].len), 0);
            }
        } else {
            cr_assert_eq(a->size_bytes, b->size_bytes);
            cr_assert_eq(memcmp(a->data, b->data, a->size_bytes), 0);
        }
    }
    ir_graph_free(g2);
    ir_graph_free(g);
}

static IrAttr *unknown_attr(IrGraph *g, uint32_t node, uint32_t i, const char *name,
                            IrAttrKind kind, uint32_t n) {
    IrAttr *a = &g->nodes[node].attrs[i];
    a->name = ir_arena_strdup(g->arena, name);
    a->kind = (uint8_t)kind;
    a->present = true;
    a->n = n;
    return a;
}

Test(ir_text, round_trips_every_attribute_kind_on_an_unknown_op) {
    srand((unsigned)time(NULL));
    IrGraph *g = new_model("attrs");
    ir_graph_set_opset(g, "com.example", 2);
    int64_t d[2] = {2, 2};
    uint32_t x = add_tensor_value(g, "x", IR_DTYPE_F32, 2, d, IR_VALUE_INPUT);
    ir_graph_add_input(g, x);
    enum { N_ATTRS = 20 };
    uint32_t id = ir_node_add(g, IR_OP_UNKNOWN, "custom", 1, 1, N_ATTRS);
    IrNode *n = &g->nodes[id];
    n->op_type = "MyOp";
    n->domain = "com.example";
    n->opset = 2;
    n->inputs[0] = x;
    IrArena *ar = g->arena;
    unknown_attr(g, id, 0, "i", IR_ATTR_KIND_INT, 0)->i = INT64_MIN;
    unknown_attr(g, id, 1, "f", IR_ATTR_KIND_FLOAT, 0)->f = 0.1f;
    IrAttr *s = unknown_attr(g, id, 2, "s", IR_ATTR_KIND_STRING, 0);
    s->s = (IrStr){"a\0b\"c\\\t\n\x7f\xe9", 10};
    IrAttr *ints = unknown_attr(g, id, 3, "ints", IR_ATTR_KIND_INTS, 3);
    ints->ints = ir_arena_alloc(ar, 3 * sizeof(int64_t));
    ints->ints[0] = -1, ints->ints[1] = 0, ints->ints[2] = INT64_MAX;
    IrAttr *fl = unknown_attr(g, id, 4, "floats", IR_ATTR_KIND_FLOATS, 4);
    fl->floats = ir_arena_alloc(ar, 4 * sizeof(float));
    fl->floats[0] = -0.0f, fl->floats[1] = 1e30f, fl->floats[2] = 1.0f, fl->floats[3] = 3.0e-42f;
    IrAttr *ss = unknown_attr(g, id, 5, "strings", IR_ATTR_KIND_STRINGS, 2);
    ss->strings = ir_arena_alloc(ar, 2 * sizeof(IrStr));
    ss->strings[0] = (IrStr){"", 0}, ss->strings[1] = (IrStr){"two words", 9};
    IrAttr *te = unknown_attr(g, id, 6, "tensor", IR_ATTR_KIND_TENSOR, 1);
    te->tensors = ir_tensor_new(ar, IR_DTYPE_I64, 1, (int64_t[]){3});
    te->tensors->name = "named const";
    fill_random(te->tensors->data, te->tensors->size_bytes);
    IrAttr *ts = unknown_attr(g, id, 7, "tensors", IR_ATTR_KIND_TENSORS, 2);
    ts->tensors = ir_arena_alloc(ar, 2 * sizeof(IrTensor));
    ts->tensors[0] = *ir_tensor_new(ar, IR_DTYPE_F16, 2, d);
    ts->tensors[1] = *ir_tensor_new(ar, IR_DTYPE_STRING, 1, (int64_t[]){1});
    ts->tensors[1].strings[0] = (IrStr){"x", 1};
    IrAttr *sp = unknown_attr(g, id, 8, "sparse", IR_ATTR_KIND_SPARSE_TENSOR, 1);
    sp->tensors = ir_tensor_new(ar, IR_DTYPE_F32, 2, d);
    fill_random(sp->tensors->data, sp->tensors->size_bytes);
    IrAttr *sps = unknown_attr(g, id, 9, "sparses", IR_ATTR_KIND_SPARSE_TENSORS, 1);
    sps->tensors = ir_tensor_new(ar, IR_DTYPE_U8, 0, NULL);
    IrAttr *tp = unknown_attr(g, id, 10, "type", IR_ATTR_KIND_TYPE_PROTO, 1);
    tp->types = ir_arena_alloc(ar, sizeof(IrType));
    tp->types[0] = ir_type_tensor(IR_DTYPE_BF16, -1, NULL);
    IrAttr *tps = unknown_attr(g, id, 11, "types", IR_ATTR_KIND_TYPE_PROTOS, 2);
    tps->types = ir_arena_alloc(ar, 2 * sizeof(IrType));
    IrType *elem = ir_arena_alloc(ar, sizeof(IrType));
    *elem = ir_type_tensor(IR_DTYPE_I8, 1, (int64_t[]){IR_DIM_UNKNOWN});
    tps->types[0] = (IrType){.kind = IR_TYPE_SEQUENCE, .rank = -1, .elem = elem};
    tps->types[1] = (IrType){.kind = IR_TYPE_MAP, .rank = -1, .key_dtype = IR_DTYPE_STRING,
                             .elem = elem};
    /* empty lists of every kind */
    IrAttrKind empties[] = {IR_ATTR_KIND_INTS,    IR_ATTR_KIND_FLOATS,
                            IR_ATTR_KIND_STRINGS, IR_ATTR_KIND_TENSORS,
                            IR_ATTR_KIND_GRAPHS,  IR_ATTR_KIND_SPARSE_TENSORS,
                            IR_ATTR_KIND_TYPE_PROTOS};
    for (uint32_t i = 0; i < 7; i++) {
        char name[16];
        snprintf(name, sizeof name, "empty%u", i);
        unknown_attr(g, id, 12 + i, name, empties[i], 0);
    }
    /* a subgraph attribute */
    uint32_t sub = ir_graph_add_subgraph(g, "body");
    IrGraph *sg = g->subgraphs[sub];
    uint32_t ox = add_tensor_value(sg, "x", IR_DTYPE_F32, 2, d, IR_VALUE_OUTER);
    sg->values[ox].producer = x;
    ir_graph_add_output(sg, ox);
    IrAttr *ga = unknown_attr(g, id, 19, "body", IR_ATTR_KIND_GRAPH, 1);
    ga->graphs = ir_arena_alloc(ar, sizeof(uint32_t));
    ga->graphs[0] = sub;
    uint32_t y = add_tensor_value(g, "y", IR_DTYPE_F32, 2, d, IR_VALUE_NODE);
    g->values[y].producer = id;
    g->nodes[id].outputs[0] = y;
    ir_graph_add_output(g, y);

    IrGraph *g2 = round_trip(g);
    const IrNode *n2 = &g2->nodes[0];
    cr_assert_eq(n2->op, IR_OP_UNKNOWN);
    cr_assert_str_eq(n2->op_type, "MyOp");
    cr_assert_str_eq(n2->domain, "com.example");
    cr_assert_eq(n2->n_attrs, N_ATTRS);
    for (uint32_t i = 0; i < N_ATTRS; i++) {
        cr_assert_str_eq(n2->attrs[i].name, g->nodes[id].attrs[i].name);
        cr_assert_eq(n2->attrs[i].kind, g->nodes[id].attrs[i].kind, "attr %u", i);
    }
    cr_assert_eq(n2->attrs[0].i, INT64_MIN);
    cr_assert_eq(n2->attrs[2].s.len, 10);
    cr_assert_eq(memcmp(n2->attrs[2].s.data, s->s.data, 10), 0);
    cr_assert_eq(n2->attrs[4].floats[3], 3.0e-42f);
    cr_assert(signbit(n2->attrs[4].floats[0]));
    cr_assert_str_eq(n2->attrs[6].tensors[0].name, "named const");
    const IrGraph *sg2 = g2->subgraphs[n2->attrs[19].graphs[0]];
    cr_assert_eq(sg2->values[sg2->outputs[0]].kind, IR_VALUE_OUTER);
    cr_assert_eq(sg2->values[sg2->outputs[0]].producer, g2->inputs[0]);
    ir_graph_free(g2);
    ir_graph_free(g);
}

Test(ir_text, round_trips_floats_bit_exactly) {
    unsigned seed = (unsigned)time(NULL);
    srand(seed);
    enum { N_FLOATS = 2000 };
    IrGraph *g = new_model("floats");
    uint32_t id = ir_node_add(g, IR_OP_UNKNOWN, "", 0, 0, 1);
    g->nodes[id].op_type = "F";
    IrAttr *a = unknown_attr(g, id, 0, "v", IR_ATTR_KIND_FLOATS, N_FLOATS);
    a->floats = ir_arena_alloc(g->arena, N_FLOATS * sizeof(float));
    uint32_t specials[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                           0xffc00000u, 0x7f800001u, 0x00000001u, 0x807fffffu, 0x7f7fffffu};
    for (uint32_t i = 0; i < N_FLOATS; i++) {
        uint32_t bits = i < 10 ? specials[i] : ((uint32_t)rand() << 16) ^ (uint32_t)rand();
        memcpy(&a->floats[i], &bits, 4);
    }
    IrGraph *g2 = round_trip(g);
    const IrAttr *b = &g2->nodes[0].attrs[0];
    for (uint32_t i = 0; i < N_FLOATS; i++)
        cr_assert_eq(memcmp(&a->floats[i], &b->floats[i], 4), 0, "float %u (seed %u)", i, seed);
    ir_graph_free(g2);
    ir_graph_free(g);
}

Test(ir_text, round_trips_sequences_optionals_maps_sparse_layouts_and_quant) {
    IrGraph *g = new_model("types");
    IrArena *ar = g->arena;
    IrType *f32v = ir_arena_alloc(ar, sizeof(IrType));
    *f32v = ir_type_tensor(IR_DTYPE_F32, 1, (int64_t[]){IR_DIM_UNKNOWN});
    f32v->syms[0] = ir_graph_sym(g, "seq len");
    IrType *seq = ir_arena_alloc(ar, sizeof(IrType));
    *seq = (IrType){.kind = IR_TYPE_SEQUENCE, .rank = -1, .elem = f32v};
    IrType types[6];
    types[0] = *seq;
    types[1] = (IrType){.kind = IR_TYPE_OPTIONAL, .rank = -1, .elem = seq};
    types[2] = (IrType){.kind = IR_TYPE_MAP, .rank = -1, .key_dtype = IR_DTYPE_I64, .elem = f32v};
    types[3] = ir_type_tensor(IR_DTYPE_F32, 2, (int64_t[]){10, 10});
    types[3].kind = IR_TYPE_SPARSE_TENSOR;
    types[4] = ir_type_tensor(IR_DTYPE_I8, 4, (int64_t[]){1, 8, 8, 16});
    types[4].layout = IR_LAYOUT_NHWC;
    types[4].syms[0] = ir_graph_sym(g, "N");
    types[5] = (IrType){.kind = IR_TYPE_OPTIONAL, .rank = -1, .elem = NULL};
    for (int i = 0; i < 6; i++) {
        char name[8];
        snprintf(name, sizeof name, "in%d", i);
        uint32_t v = ir_value_add(g, name, &types[i], IR_VALUE_INPUT);
        ir_graph_add_input(g, v);
        ir_graph_add_output(g, v);
    }
    uint32_t q1 = g->inputs[4];
    IrQuant *q = ir_arena_alloc(ar, sizeof *q);
    q->axis = 3, q->n = 2;
    q->scales = ir_arena_alloc(ar, 2 * sizeof(float));
    q->zero_points = ir_arena_alloc(ar, 2 * sizeof(int32_t));
    q->scales[0] = 0.02f, q->scales[1] = 1.5e-3f, q->zero_points[0] = -3, q->zero_points[1] = 7;
    g->values[q1].quant = q;
    int64_t one = 1;
    uint32_t qv = add_tensor_value(g, "per_tensor", IR_DTYPE_U8, 1, &one, IR_VALUE_INPUT);
    IrQuant *pq = ir_arena_alloc(ar, sizeof *pq);
    pq->axis = -1, pq->n = 1;
    pq->scales = ir_arena_alloc(ar, sizeof(float));
    pq->scales[0] = 0.5f;
    g->values[qv].quant = pq;
    ir_graph_add_input(g, qv);
    IrGraph *g2 = round_trip(g);
    for (uint32_t i = 0; i < 6; i++)
        cr_assert(ir_type_equal(&g->values[g->inputs[i]].type, &g2->values[g2->inputs[i]].type),
                  "type %u", i);
    const IrQuant *q2 = g2->values[g2->inputs[4]].quant;
    cr_assert_not_null(q2);
    cr_assert_eq(q2->axis, 3);
    cr_assert_eq(q2->zero_points[1], 7);
    cr_assert_null(g2->values[g2->inputs[6]].quant->zero_points);
    cr_assert_eq(g2->n_syms, 2);
    ir_graph_free(g2);
    ir_graph_free(g);
}

Test(ir_text, round_trips_nested_subgraphs_with_outer_references) {
    IrGraph *g = new_model("nest");
    int64_t d[1] = {3};
    IrType t = ir_type_tensor(IR_DTYPE_F32, 1, d);
    IrType bt = ir_type_tensor(IR_DTYPE_BOOL, 0, NULL);
    uint32_t c = ir_value_add(g, "cond", &bt, IR_VALUE_INPUT);
    uint32_t x = ir_value_add(g, "x", &t, IR_VALUE_INPUT);
    ir_graph_add_input(g, c);
    ir_graph_add_input(g, x);
    uint32_t then_i = ir_graph_add_subgraph(g, "then");
    uint32_t else_i = ir_graph_add_subgraph(g, "else");
    /* then: an If of its own whose branch reads x two levels up, under another name */
    IrGraph *th = g->subgraphs[then_i];
    uint32_t tc = ir_value_add(th, "cond", &bt, IR_VALUE_OUTER);
    th->values[tc].producer = c;
    uint32_t inner_i = ir_graph_add_subgraph(th, "inner");
    IrGraph *in = th->subgraphs[inner_i];
    uint32_t tx = ir_value_add(th, "x", &t, IR_VALUE_OUTER);
    th->values[tx].producer = x;
    uint32_t ix = ir_value_add(in, "x_renamed", &t, IR_VALUE_OUTER);
    in->values[ix].producer = tx;
    const char *o[] = {"neg"};
    uint32_t nn = add_node(in, IR_OP_NEG, "", &ix, 1, o, 1, &t);
    ir_graph_add_output(in, in->nodes[nn].outputs[0]);
    const char *o2[] = {"r"};
    uint32_t ifn = add_node(th, IR_OP_IF, "inner_if", &tc, 1, o2, 1, &t);
    for (uint32_t k = 0; k < 2; k++) {
        IrAttr *br = ir_node_attr(&th->nodes[ifn], k ? IR_ATTR_IF_THEN_BRANCH
                                                     : IR_ATTR_IF_ELSE_BRANCH);
        br->present = true;
        br->n = 1;
        br->graphs = ir_arena_alloc(g->arena, sizeof(uint32_t));
        br->graphs[0] = inner_i;
    }
    ir_graph_add_output(th, th->nodes[ifn].outputs[0]);
    IrGraph *el = g->subgraphs[else_i];
    uint32_t ex = ir_value_add(el, "x", &t, IR_VALUE_OUTER);
    el->values[ex].producer = x;
    ir_graph_add_output(el, ex);
    uint32_t top = add_node(g, IR_OP_IF, "top", &c, 1, o2, 1, &t);
    IrAttr *tb = ir_node_attr(&g->nodes[top], IR_ATTR_IF_THEN_BRANCH);
    IrAttr *eb = ir_node_attr(&g->nodes[top], IR_ATTR_IF_ELSE_BRANCH);
    tb->present = eb->present = true;
    tb->n = eb->n = 1;
    tb->graphs = ir_arena_alloc(g->arena, sizeof(uint32_t));
    eb->graphs = ir_arena_alloc(g->arena, sizeof(uint32_t));
    tb->graphs[0] = then_i;
    eb->graphs[0] = else_i;
    ir_graph_add_output(g, g->nodes[top].outputs[0]);
    char *text = print_full(g);
    cr_assert_not_null(strstr(text, "outer %x_renamed : f32[3] from %x\n"), "%s", text);
    free(text);
    IrGraph *g2 = round_trip(g);
    const IrNode *top2 = &g2->nodes[0];
    cr_assert_eq(top2->op, IR_OP_IF);
    const IrGraph *th2 = g2->subgraphs[ir_node_attr(top2, IR_ATTR_IF_THEN_BRANCH)->graphs[0]];
    const IrGraph *in2 = th2->subgraphs[0];
    const IrValue *ix2 = &in2->values[0];
    cr_assert_eq(ix2->kind, IR_VALUE_OUTER);
    cr_assert_str_eq(th2->values[ix2->producer].name, "x");
    cr_assert_eq(g2->values[th2->values[ix2->producer].producer].kind, IR_VALUE_INPUT);
    ir_graph_free(g2);
    ir_graph_free(g);
}

Test(ir_text, round_trips_omitted_inputs_and_outputs_and_weird_names) {
    IrGraph *g = new_model("");
    int64_t d[1] = {2};
    IrType t = ir_type_tensor(IR_DTYPE_F32, 1, d);
    const char *names[] = {"", "", "0", "has space", "quote\"back\\slash", "ends:", "tab\t",
                           "\xc3\xa9t\xc3\xa9", "dup", "dup", "onnx::Add_3", "_", "-neg"};
    uint32_t n_names = sizeof names / sizeof names[0];
    uint32_t vals[16];
    for (uint32_t i = 0; i < n_names; i++) {
        vals[i] = ir_value_add(g, names[i], &t, IR_VALUE_INPUT);
        ir_graph_add_input(g, vals[i]);
    }
    const char *outs[] = {"out", NULL, "dup", NULL};
    uint32_t ins[] = {vals[0], IR_NONE, vals[1], vals[9], IR_NONE};
    uint32_t n = add_node(g, IR_OP_UNKNOWN, "node \"odd\"", ins, 5, outs, 4, &t);
    g->nodes[n].op_type = "Weird Op";
    g->nodes[n].domain = "my domain";
    g->nodes[n].opset = 9;
    /* a known op name kept unknown, a node with no results, a Relu from another opset */
    uint32_t k = add_node(g, IR_OP_UNKNOWN, "", &vals[2], 1, outs, 1, &t);
    g->nodes[k].op_type = "Relu";
    add_node(g, IR_OP_UNKNOWN, "sink", &vals[3], 1, NULL, 0, NULL);
    g->nodes[g->n_nodes - 1].op_type = "Sink";
    uint32_t r = add_node(g, IR_OP_RELU, "", &vals[4], 1, (const char *[]){"r"}, 1, NULL);
    g->nodes[r].opset = 6;
    for (uint32_t i = 0; i < g->n_nodes; i++)
        for (uint32_t j = 0; j < g->nodes[i].n_outputs; j++)
            if (g->nodes[i].outputs[j] != IR_NONE) ir_graph_add_output(g, g->nodes[i].outputs[j]);
    ir_graph_add_output(g, IR_NONE);
    char *text = print_full(g);
    cr_assert_not_null(strstr(text, "%dup~1"), "%s", text);
    cr_assert_not_null(strstr(text, "%\"\"~0"), "%s", text);
    cr_assert_not_null(strstr(text, "ir_op=unknown"), "%s", text);
    cr_assert_not_null(strstr(text, "() = Sink(%\"has space\")"), "%s", text);
    free(text);
    IrGraph *g2 = round_trip(g);
    cr_assert_eq(g2->nodes[0].n_inputs, 5);
    cr_assert_eq(g2->nodes[0].inputs[1], IR_NONE);
    cr_assert_eq(g2->nodes[0].n_outputs, 4);
    cr_assert_eq(g2->nodes[0].outputs[3], IR_NONE);
    cr_assert_eq(g2->nodes[1].op, IR_OP_UNKNOWN);
    cr_assert_eq(g2->nodes[3].op, IR_OP_RELU);
    cr_assert_eq(g2->nodes[3].opset, 6);
    ir_graph_free(g2);
    ir_graph_free(g);
}

/* ---- parsing hand-written text ----------------------------------------------------- */

Test(ir_text, parses_known_ops_into_attribute_slots_and_resolves_forward_references) {
    const char *text = "kiln-ir 1\n"
                       "opset \"\"=13\n"
                       "graph g {\n"
                       "  # a use before its definition\n"
                       "  %z: f32[2] = Relu(%y)\n"
                       "  %y : f32[2] = Conv(%x, %x) {group=4, strides=[2, 2],\n"
                       "                              auto_pad=\"VALID\"}\n"
                       "  input %x : f32[2]\n"
                       "  output %z\n"
                       "}\n";
    IrGraph *g = parse_ok(text);
    cr_assert_eq(g->n_nodes, 2);
    const IrNode *conv = &g->nodes[1];
    cr_assert_eq(conv->op, IR_OP_CONV);
    cr_assert_eq(conv->opset, 13);
    cr_assert_eq(ir_attr_i(conv, IR_ATTR_CONV_GROUP), 4);
    cr_assert_str_eq(ir_attr_s(conv, IR_ATTR_CONV_AUTO_PAD), "VALID");
    uint32_t n_strides = 0;
    const int64_t *strides = ir_attr_ints(conv, IR_ATTR_CONV_STRIDES, &n_strides);
    cr_assert_eq(n_strides, 2);
    cr_assert_eq(strides[1], 2);
    cr_assert(!ir_attr_present(conv, IR_ATTR_CONV_PADS));
    cr_assert_eq(g->nodes[0].inputs[0], conv->outputs[0]);
    cr_assert_eq(g->values[g->outputs[0]].producer, 0);
    ir_graph_free(round_trip(g));
    ir_graph_free(g);
}

Test(ir_text, accepts_constants_written_as_full_tensor_literals) {
    const char *text = "kiln-ir 1\ngraph g {\n"
                       "  const %c : f32[?] = tensor other_name f32[2] hex\"0000803f00000040\"\n"
                       "  const %s : string[2] = [\"a\", \"\\x00b\"]\n"
                       "  output %c, %s\n}\n";
    IrGraph *g = parse_ok(text);
    cr_assert_str_eq(g->values[0].tensor->name, "other_name");
    cr_assert_eq(((float *)g->values[0].tensor->data)[1], 2.0f);
    cr_assert_eq(g->values[1].tensor->strings[1].len, 2);
    ir_graph_free(round_trip(g));
    ir_graph_free(g);
}

static void assert_error_contains(const char *text, const char *needle) {
    char *msg = parse_error(text, strlen(text));
    cr_assert_not_null(strstr(msg, needle), "diagnostic '%s' lacks '%s'", msg, needle);
    free(msg);
}

Test(ir_text, reports_errors_with_line_and_column) {
    assert_error_contains("kiln-ir 1\ngraph g {\n  output %nope\n}\n", "3:10: unknown value %nope");
    assert_error_contains("kiln-ir 2\ngraph g {}\n", "version 2 is not supported");
    assert_error_contains("kiln-ir 1\ngraph g {\n  input %x : f33[2]\n}\n",
                          "3:14: unknown element type 'f33'");
    assert_error_contains("kiln-ir 1\ngraph g {\n  %y = Conv(%x) {nope=1}\n  input %x\n}\n",
                          "3:18: op Conv (opset 0) has no attribute 'nope'");
    assert_error_contains("kiln-ir 1\ngraph g {\n  input %x\n  input %x\n}\n",
                          "4:9: value 'x' is defined twice");
    assert_error_contains("kiln-ir 1\ngraph g {\n  const %c : f32[2] = hex\"00\"\n}\n",
                          "needs 8 bytes");
    assert_error_contains("kiln-ir 1\ngraph g {\n  const %c : f32[2] = hex\"0\"\n}\n",
                          "odd hex digits");
    assert_error_contains("kiln-ir 1\ngraph g {\n  const %c : f32[1] = hex\"0000803g\"\n}\n",
                          "3:26: bad hex digit");
    assert_error_contains("kiln-ir 1\ngraph g {\n  input %x : f32[1,2,3,4,5,6,7,8,9]\n}\n",
                          "rank above 8");
    assert_error_contains("kiln-ir 1\ngraph g {\n  %y = F() {a=[]}\n}\n", "empty list needs");
    assert_error_contains("kiln-ir 1\ngraph g {\n  %y = F() {a=[1, \"s\"]}\n}\n",
                          "different kinds");
    assert_error_contains("kiln-ir 1\ngraph g {\n  %y = F() {a=\"\\q\"}\n}\n", "unknown escape");
    assert_error_contains("kiln-ir 1\ngraph g {\n  outer %x\n}\n", "outside a subgraph");
    assert_error_contains("kiln-ir 1\ngraph g {\n  input %x : f32[2] = hex\"00\" }\n",
                          "needs 8 bytes");
    assert_error_contains("kiln-ir 1\ngraph g {\n  const %x : f32[4611686018427387904,4] = "
                          "hex\"\"\n}\n", "tensor too large");
    assert_error_contains("kiln-ir 1\ngraph g {\n  %y = F() {a=99999999999999999999}\n}\n",
                          "does not fit in 64 bits");
    assert_error_contains("kiln-ir 1\ngraph g {\n  input %\"a\\x00b\"\n}\n", "NUL");
    assert_error_contains("kiln-ir 1\ngraph g {\n  input %x\n", "end of input");
}

Test(ir_text, refuses_elided_tensor_data_with_a_clear_diagnostic) {
    IrGraph *g = new_model("big");
    int64_t d[1] = {IR_PRINT_ELIDE_BYTES};
    ir_graph_add_output(g, add_const(g, "w", IR_DTYPE_F32, 1, d));
    IrPrintOpts brief = {false};
    char *text = ir_print_to_string(g, &brief);
    cr_assert_not_null(strstr(text, "<256 bytes fnv1a:"), "%s", text);
    char *msg = parse_error(text, strlen(text));
    cr_assert_not_null(strstr(msg, "elided"), "%s", msg);
    cr_assert_not_null(strstr(msg, "5:24:"), "%s", msg);
    free(msg);
    free(text);
    ir_graph_free(g);
}

/* A graph that touches most of the grammar, for the garbage tests. */
static char *sample_text(void) {
    IrGraph *g = new_model("sample");
    int64_t d[2] = {2, 2};
    uint32_t x = add_tensor_value(g, "x", IR_DTYPE_F32, 2, d, IR_VALUE_INPUT);
    ir_graph_add_input(g, x);
    uint32_t c = add_const(g, "c", IR_DTYPE_F32, 2, d);
    add_const(g, "s", IR_DTYPE_STRING, 1, d);
    IrType t = ir_type_tensor(IR_DTYPE_F32, 2, d);
    t.syms[0] = ir_graph_sym(g, "N");
    uint32_t ins[] = {x, c, IR_NONE};
    uint32_t n = add_node(g, IR_OP_CONV, "conv", ins, 3, (const char *[]){"y", NULL}, 2, &t);
    IrAttr *p = ir_node_attr(&g->nodes[n], IR_ATTR_CONV_PADS);
    p->present = true;
    p->n = 1;
    p->ints = ir_arena_alloc(g->arena, sizeof(int64_t));
    uint32_t sub = ir_graph_add_subgraph(g, "b");
    uint32_t o = add_tensor_value(g->subgraphs[sub], "x", IR_DTYPE_F32, 2, d, IR_VALUE_OUTER);
    g->subgraphs[sub]->values[o].producer = x;
    ir_graph_add_output(g->subgraphs[sub], o);
    uint32_t u = add_node(g, IR_OP_UNKNOWN, "u", &x, 1, (const char *[]){"z"}, 1, &t);
    g->nodes[u].op_type = "U";
    ir_graph_add_output(g, g->nodes[n].outputs[0]);
    ir_graph_add_output(g, g->nodes[u].outputs[0]);
    char *text = print_full(g);
    ir_graph_free(g);
    return text;
}

Test(ir_text, survives_every_truncation_of_valid_text) {
    char *text = sample_text();
    size_t len = strlen(text);
    for (size_t cut = 0; cut < len; cut++) {
        Diag d;
        diag_init(&d);
        IrGraph *g = ir_parse(text, cut, &d);
        if (!g) {
            cr_assert(diag_has_errors(&d), "no diagnostic at cut %zu", cut);
            cr_assert(strchr(d.msgs[0].text, ':'), "no line:col in '%s'", d.msgs[0].text);
        }
        ir_graph_free(g);
        diag_free(&d);
    }
    free(text);
}

Test(ir_text, survives_random_garbage_and_mutations) {
    unsigned seed = (unsigned)time(NULL);
    srand(seed);
    char *text = sample_text();
    size_t len = strlen(text);
    char *buf = malloc(len + 1);
    static const char alphabet[] = "%\"\\{}[]()<>,=:@?*~_-.#\n 0123456789abcdefxyz";
    for (int round = 0; round < 3000; round++) {
        memcpy(buf, text, len + 1);
        int n_mut = 1 + rand() % 4;
        for (int m = 0; m < n_mut; m++) {
            size_t at = (size_t)rand() % len;
            buf[at] = rand() % 4 ? alphabet[rand() % (sizeof alphabet - 1)] : (char)rand();
        }
        Diag d;
        diag_init(&d);
        IrGraph *g = ir_parse(buf, len, &d);
        if (g) {
            char *again = print_full(g); /* whatever parsed must print */
            free(again);
        } else {
            cr_assert(diag_has_errors(&d), "seed %u round %d", seed, round);
        }
        ir_graph_free(g);
        diag_free(&d);
    }
    for (int round = 0; round < 500; round++) {
        size_t n = (size_t)rand() % 200;
        for (size_t i = 0; i < n; i++) buf[i] = alphabet[rand() % (sizeof alphabet - 1)];
        Diag d;
        diag_init(&d);
        IrGraph *g = ir_parse(buf, n, &d);
        cr_assert(g || diag_has_errors(&d));
        ir_graph_free(g);
        diag_free(&d);
    }
    /* deep nesting is refused, not a stack overflow */
    enum { DEEP = 100000 };
    char *deep = malloc(DEEP * 8 + 64);
    size_t k = (size_t)sprintf(deep, "kiln-ir 1\ngraph g {\n input %%x : ");
    for (int i = 0; i < DEEP; i++) k += (size_t)sprintf(deep + k, "seq<");
    Diag d;
    diag_init(&d);
    cr_assert_null(ir_parse(deep, k, &d));
    cr_assert_not_null(strstr(d.msgs[0].text, "nested deeper"));
    diag_free(&d);
    free(deep);
    free(buf);
    free(text);
}

/* ---- golden files ------------------------------------------------------------------ */

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    *len = fread(buf, 1, (size_t)n, f);
    buf[*len] = 0;
    fclose(f);
    return buf;
}

Test(ir_text, golden_files_are_fixed_points_of_parse_then_print) {
    const char *dir = KILN_SOURCE_DIR "/tests/golden/text";
    DIR *dp = opendir(dir);
    cr_assert_not_null(dp, "no %s", dir);
    int n_files = 0;
    struct dirent *e;
    while ((e = readdir(dp))) {
        size_t nl = strlen(e->d_name);
        if (nl < 4 || strcmp(e->d_name + nl - 3, ".ir") != 0) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t len = 0;
        char *text = read_file(path, &len);
        cr_assert_not_null(text);
        IrGraph *g = parse_ok(text);
        char *again = print_full(g);
        cr_assert_str_eq(again, text, "%s changed; run golden_text --bless after review", path);
        free(again);
        free(text);
        ir_graph_free(g);
        n_files++;
    }
    closedir(dp);
    cr_assert_geq(n_files, 5);
}

Test(ir_text, round_trips_a_memory_plan) {
    IrGraph *g = new_model("planned");
    int64_t d[1] = {16};
    IrType t = ir_type_tensor(IR_DTYPE_F32, 1, d);
    uint32_t x = add_tensor_value(g, "x", IR_DTYPE_F32, 1, d, IR_VALUE_INPUT);
    ir_graph_add_input(g, x);
    uint32_t a = add_node(g, IR_OP_RELU, "", &x, 1, (const char *[]){"a"}, 1, &t);
    uint32_t va = g->nodes[a].outputs[0];
    uint32_t b = add_node(g, IR_OP_NEG, "", &va, 1, (const char *[]){"b"}, 1, &t);
    ir_graph_add_output(g, g->nodes[b].outputs[0]);
    for (uint32_t v = 0; v < g->n_values; v++) g->values[v].mem_offset = -1;
    g->values[va].mem_offset = 0; /* offset 0 is a real slot in a planned graph */
    g->arena_size_bytes = 64;
    g->arena_lower_bound_bytes = 64;
    g->arena_naive_bytes = 64;
    char *text = print_full(g);
    cr_assert_not_null(strstr(text, "plan arena=64 lower_bound=64 naive=64\n"), "%s", text);
    cr_assert_not_null(strstr(text, "%a : f32[16] mem=0 = Relu(%x)"), "%s", text);
    cr_assert_not_null(strstr(text, "%b : f32[16] = Neg(%a)"), "%s", text);
    free(text);
    IrGraph *g2 = round_trip(g);
    cr_assert_eq(g2->values[g2->inputs[0]].mem_offset, -1);
    cr_assert_eq(g2->values[g2->nodes[0].outputs[0]].mem_offset, 0);
    cr_assert_eq(g2->arena_naive_bytes, 64);
    ir_graph_free(g2);
    ir_graph_free(g);
}
