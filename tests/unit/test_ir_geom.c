/* Unit tests of ir/geom.c, the one decoder of convolution and pooling geometry that shape
 * inference and both backends use: output sizes against a direct evaluation of ONNX's
 * formulas on random geometries, auto_pad's pads, ConvTranspose, FusedConv read like Conv,
 * and the refusals. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ir/geom.h"

static IrGraph *graph;

/* Node 0 of a one-node graph x -> OP{attrs} -> y (types are not needed by the decoder). */
static const IrNode *node(const char *op, const char *attrs) {
    char text[1024];
    snprintf(text, sizeof text,
             "kiln-ir 1\nmodel ir_version=8\nopset \"\"=17, kiln=1\ngraph g {\n"
             "  input %%x : f32[1,3,9,9]\n  input %%w : f32[4,3,3,3]\n"
             "  %%y : f32[1,4,9,9] = %s(%%x, %%w)%s name=n {%s}\n  output %%y\n}\n",
             op, strncmp(op, "Fused", 5) == 0 ? " domain=kiln" : "", attrs);
    Diag d;
    diag_init(&d);
    if (graph) ir_graph_free(graph);
    graph = ir_parse(text, strlen(text), &d);
    if (!graph) diag_print(&d, stderr, "parse");
    cr_assert_not_null(graph);
    diag_free(&d);
    return &graph->nodes[0];
}

static void teardown(void) {
    if (graph) ir_graph_free(graph);
    graph = NULL;
}

TestSuite(ir_geom, .fini = teardown);

static IrConvAttrs attrs_of(const IrNode *n, int ns, const IrType *w) {
    IrConvAttrs a;
    const char *why = NULL;
    cr_assert(ir_conv_attrs(n, ns, w, &a, &why), "refused: %s", why ? why : "?");
    return a;
}

static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
static int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

Test(ir_geom, computes_output_sizes_as_onnx_states_them_on_random_geometries) {
    srand((unsigned)time(NULL));
    for (int trial = 0; trial < 200; trial++) {
        int64_t in = 1 + rand() % 40, k = 1 + rand() % 5, s = 1 + rand() % 3, d = 1 + rand() % 2;
        int64_t pb = rand() % 3, pe = rand() % 3;
        bool ceil = rand() % 2;
        char attrs[256];
        snprintf(attrs, sizeof attrs, "ceil_mode=%d, dilations=[%lld], kernel_shape=[%lld], "
                 "pads=[%lld, %lld], strides=[%lld]", ceil, (long long)d, (long long)k,
                 (long long)pb, (long long)pe, (long long)s);
        IrConvAttrs a = attrs_of(node("MaxPool", attrs), 1, NULL);
        int64_t ek = (k - 1) * d + 1, span = in + pb + pe - ek;
        int64_t want = span < 0 ? 0 : (ceil ? ceil_div(span, s) : floor_div(span, s)) + 1;
        if (ceil && span >= 0 && (want - 1) * s >= in + pb) want--; /* window in the end pad */
        cr_expect_eq(ir_conv_out_dim(&a, 0, in), want, "in %lld k %lld s %lld d %lld pads %lld,%lld "
                     "ceil %d", (long long)in, (long long)k, (long long)s, (long long)d,
                     (long long)pb, (long long)pe, ceil);
    }
}

Test(ir_geom, same_padding_keeps_ceil_of_input_over_stride_and_puts_the_odd_pad_last) {
    IrType w = ir_type_tensor(IR_DTYPE_F32, 4, (int64_t[]){4, 3, 4, 4});
    IrConvAttrs a = attrs_of(node("Conv", "auto_pad=\"SAME_UPPER\", strides=[2, 2]"), 2, &w);
    cr_expect_eq(ir_conv_out_dim(&a, 0, 9), 5);
    IrConvGeom g;
    const char *why;
    cr_assert(ir_conv_geom(&a, (int64_t[]){9, 9}, (int64_t[]){5, 5}, &g, &why));
    cr_expect_eq(g.k[0], 4, "the kernel comes from the weights without kernel_shape");
    /* (5 - 1) * 2 + 4 - 9 = 3: one before, two after (upper) */
    cr_expect(g.pad[0] == 1 && g.pad_end[0] == 2);
    a = attrs_of(node("Conv", "auto_pad=\"SAME_LOWER\", strides=[2, 2]"), 2, &w);
    cr_assert(ir_conv_geom(&a, (int64_t[]){9, 9}, (int64_t[]){5, 5}, &g, &why));
    cr_expect(g.pad[0] == 2 && g.pad_end[0] == 1);
    a = attrs_of(node("Conv", "auto_pad=\"VALID\", pads=[1, 1, 1, 1]"), 2, &w);
    cr_expect_eq(ir_conv_out_dim(&a, 1, 9), 6, "VALID ignores pads");
}

Test(ir_geom, reads_fused_conv_and_conv_the_same) {
    const char *attrs = "dilations=[2, 1], group=1, kernel_shape=[3, 3], pads=[1, 2, 1, 0], "
                        "strides=[1, 2]";
    IrConvAttrs c = attrs_of(node("Conv", attrs), 2, NULL);
    IrConvAttrs f = attrs_of(node("FusedConv", attrs), 2, NULL);
    cr_expect(memcmp(&c, &f, sizeof c) == 0);
    cr_expect(c.d[0] == 2 && c.s[1] == 2 && c.pads[1] == 2 && c.pads[3] == 0 && c.group == 1);
}

Test(ir_geom, sizes_conv_transpose_from_pads_output_padding_or_output_shape) {
    IrConvAttrs a = attrs_of(node("ConvTranspose", "kernel_shape=[3, 3], output_padding=[1, 1], "
                                  "pads=[1, 1, 1, 1], strides=[2, 2]"), 2, NULL);
    cr_expect_eq(ir_conv_out_dim(&a, 0, 5), 2 * 4 + 1 + 3 - 2); /* s(in-1)+op+ek-pads */
    a = attrs_of(node("ConvTranspose", "kernel_shape=[3, 3], output_shape=[10, 11], "
                      "strides=[2, 2]"), 2, NULL);
    cr_expect(ir_conv_out_dim(&a, 0, 5) == 10 && ir_conv_out_dim(&a, 1, 5) == 11);
    IrConvGeom g;
    const char *why;
    cr_assert(ir_conv_geom(&a, (int64_t[]){5, 5}, (int64_t[]){10, 11}, &g, &why));
    /* total 2*4+3-10 = 1 for H: pads work out as SAME_LOWER's split without pads given */
    cr_expect(g.pad[0] + g.pad_end[0] == 1 && g.pad[1] + g.pad_end[1] == 0);
}

Test(ir_geom, refuses_malformed_attributes_saying_which) {
    IrConvAttrs a;
    const char *why;
    cr_expect(!ir_conv_attrs(node("Conv", "strides=[1, 1, 1]"), 2, NULL, &a, &why));
    cr_expect(why && strstr(why, "strides"));
    cr_expect(!ir_conv_attrs(node("Conv", "strides=[0, 1]"), 2, NULL, &a, &why));
    cr_expect(why && strstr(why, "positive"));
    cr_expect(!ir_conv_attrs(node("Conv", "pads=[1, 1]"), 2, NULL, &a, &why));
    IrConvGeom g;
    a = attrs_of(node("Conv", "pads=[-2, 0, 0, 0], kernel_shape=[1, 1]"), 2, NULL);
    cr_expect(!ir_conv_geom(&a, (int64_t[]){9, 9}, (int64_t[]){7, 9}, &g, &why));
    cr_expect(why && strstr(why, "negative"));
    a = attrs_of(node("MaxPool", "strides=[1, 1]"), 2, NULL);
    cr_expect(!ir_conv_geom(&a, (int64_t[]){9, 9}, (int64_t[]){9, 9}, &g, &why),
              "a pool without a kernel");
    cr_expect(!ir_conv_like(IR_OP_RELU) && ir_conv_like(IR_OP_QLINEAR_CONV));
}

/* b's dims against y's: (outer, mid, inner) or false. */
static bool bcast(int rb, const int64_t *db, int ry, const int64_t *dy, int64_t *o, int64_t *m, int64_t *i) {
    IrType tb = ir_type_tensor(IR_DTYPE_F32, rb, db), ty = ir_type_tensor(IR_DTYPE_F32, ry, dy);
    return ir_bcast_run(&tb, &ty, o, m, i);
}

Test(ir_geom, splits_a_broadcast_over_one_run_of_dims_and_refuses_others) {
    int64_t o, m, i;
    const int64_t y[] = {2, 7, 5, 32};
    const int64_t se[] = {2, 1, 1, 32}, row[] = {2, 7, 1, 32}, chan[] = {32}, scalar[] = {1};
    const int64_t nchw[] = {2, 32, 1, 1}, ynchw[] = {2, 32, 7, 5};
    const int64_t two_runs[] = {2, 1, 5, 1}, same[] = {2, 7, 5, 32}, other[] = {2, 7, 5, 16};
    const int64_t y1[] = {1, 7, 1, 5, 3}, b1[] = {1, 1, 1, 1, 3}; /* a unit dim inside the run */
    cr_assert(bcast(4, se, 4, y, &o, &m, &i) && o == 2 && m == 35 && i == 32);
    cr_assert(bcast(4, row, 4, y, &o, &m, &i) && o == 14 && m == 5 && i == 32);
    cr_assert(bcast(1, chan, 4, y, &o, &m, &i) && o == 1 && m == 70 && i == 32);
    cr_assert(bcast(1, scalar, 4, y, &o, &m, &i) && o == 1 && m == 2 * 7 * 5 * 32 && i == 1);
    cr_assert(bcast(4, nchw, 4, ynchw, &o, &m, &i) && o == 64 && m == 35 && i == 1);
    cr_assert(bcast(5, b1, 5, y1, &o, &m, &i) && o == 1 && m == 35 && i == 3);
    cr_assert_not(bcast(4, two_runs, 4, y, &o, &m, &i), "two runs of broadcast dims");
    cr_assert_not(bcast(4, same, 4, y, &o, &m, &i), "equal shapes are no broadcast");
    cr_assert_not(bcast(4, other, 4, y, &o, &m, &i), "a dim neither 1 nor y's");
    cr_assert_not(bcast(4, y, 1, chan, &o, &m, &i), "b of a higher rank than y");
}
