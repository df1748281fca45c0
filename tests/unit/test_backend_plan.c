/* Unit tests of backend/plan.c, the lowering plans both targets render: strided copies
 * (merging, permutations, slices) checked by running the plan against a direct evaluation
 * on random shapes, and softmax rows with the pre-13 flattening. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/plan.h"

/* Runs copy c from x into y element by element (what rt_strided_copy and kc_strided_copy do). */
static void run_copy(const PlanCopy *c, float *y, const float *x) {
    if (c->empty) return;
    int64_t idx[PLAN_COPY_MAX_DIMS] = {0}, total = plan_copy_elems(c);
    for (int64_t t = 0; t < total; t++) {
        int64_t yo = c->yoff, xo = c->xoff;
        for (int d = 0; d < c->rank; d++) yo += idx[d] * c->ys[d], xo += idx[d] * c->xs[d];
        y[yo] = x[xo];
        for (int d = c->rank - 1; d >= 0; d--) {
            if (++idx[d] < c->dims[d]) break;
            idx[d] = 0;
        }
    }
}

static int64_t numel(const int64_t *dims, int rank) {
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= dims[d];
    return n;
}

static void random_dims(int rank, int64_t *dims) {
    for (int d = 0; d < rank; d++) dims[d] = 1 + rand() % 4; /* ones too: they must drop */
}

Test(backend_plan, permutes_like_a_direct_transpose_with_fewer_dims) {
    srand((unsigned)time(NULL));
    for (int trial = 0; trial < 300; trial++) {
        int rank = 1 + rand() % 5, perm[8];
        int64_t dims[8], od[8], xs[8];
        random_dims(rank, dims);
        for (int i = 0; i < rank; i++) perm[i] = i;
        for (int i = rank - 1; i > 0; i--) { /* shuffle */
            int j = rand() % (i + 1), t = perm[i];
            perm[i] = perm[j], perm[j] = t;
        }
        int64_t n = numel(dims, rank);
        float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
        float *want = malloc((size_t)n * sizeof *want);
        for (int64_t i = 0; i < n; i++) x[i] = (float)i, y[i] = -1;
        plan_strides(dims, rank, xs);
        for (int i = 0; i < rank; i++) od[i] = dims[perm[i]];
        for (int64_t o = 0; o < n; o++) { /* y index o -> its multi-index in od */
            int64_t r = o, src = 0;
            for (int i = rank - 1; i >= 0; i--) {
                src += (r % od[i]) * xs[perm[i]];
                r /= od[i];
            }
            want[o] = x[src];
        }
        PlanCopy c;
        plan_permute(&c, rank, dims, perm);
        run_copy(&c, y, x);
        cr_assert(memcmp(y, want, (size_t)n * sizeof *y) == 0, "trial %d", trial);
        int nontrivial = 0;
        for (int i = 0; i < rank; i++) nontrivial += dims[i] > 1;
        cr_assert(c.rank <= nontrivial, "unit dims were not dropped");
        free(x), free(y), free(want);
    }
}

Test(backend_plan, turns_a_transpose_that_moves_only_unit_dims_into_one_run) {
    int64_t dims[4] = {1, 1, 8, 8}; /* NCHW with C = 1 -> NHWC: the same bytes */
    int perm[4] = {0, 2, 3, 1};
    PlanCopy c;
    plan_permute(&c, 4, dims, perm);
    cr_expect(plan_copy_contiguous(&c));
    cr_expect_eq(plan_copy_elems(&c), 64);
}

static IrGraph *graph;

static const IrNode *slice_node(int opset) {
    if (graph) ir_graph_free(graph);
    graph = ir_graph_new("g");
    uint32_t id = ir_node_add(graph, IR_OP_SLICE, "s", 5, 1, 0);
    graph->nodes[id].opset = opset;
    return &graph->nodes[id];
}

static IrTensor *i64_tensor(const int64_t *v, int n) {
    IrTensor *t = ir_tensor_new(graph->arena, IR_DTYPE_I64, 1, (int64_t[]){n});
    memcpy(t->data, v, (size_t)n * sizeof *v);
    return t;
}

Test(backend_plan, slices_like_python_on_random_starts_ends_and_steps) {
    srand((unsigned)time(NULL) + 1);
    for (int trial = 0; trial < 300; trial++) {
        int64_t dim = 1 + rand() % 12, rows = 1 + rand() % 3;
        int64_t step = (rand() % 2 ? 1 : -1) * (1 + rand() % 3);
        int64_t start = rand() % (2 * dim + 3) - dim - 1, end = rand() % (2 * dim + 3) - dim - 1;
        /* Python's slice semantics: the reference */
        int64_t want[64], m = 0;
        int64_t s = start < 0 ? start + dim : start, e = end < 0 ? end + dim : end;
        if (step > 0) {
            s = s < 0 ? 0 : s > dim ? dim : s, e = e < 0 ? 0 : e > dim ? dim : e;
            for (int64_t i = s; i < e; i += step) want[m++] = i;
        } else {
            s = s < 0 ? -1 : s > dim - 1 ? dim - 1 : s, e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
            for (int64_t i = s; i > e; i += step) want[m++] = i;
        }
        const IrNode *n = slice_node(13);
        const IrTensor *in[5] = {NULL, i64_tensor(&start, 1), i64_tensor(&end, 1),
                                 i64_tensor((int64_t[]){1}, 1), i64_tensor(&step, 1)};
        IrType x = ir_type_tensor(IR_DTYPE_F32, 2, (int64_t[]){rows, dim});
        IrType y = ir_type_tensor(IR_DTYPE_F32, 2, (int64_t[]){rows, m});
        PlanCopy c;
        const char *why = NULL;
        if (s < 0 && step < 0) continue; /* nothing to compare when Python's start is -1 */
        cr_assert(plan_slice(n, &x, &y, in, &c, &why), "refused: %s", why ? why : "?");
        float xv[3 * 12], yv[3 * 64];
        for (int i = 0; i < rows * dim; i++) xv[i] = (float)i;
        run_copy(&c, yv, xv);
        for (int r = 0; r < rows; r++)
            for (int64_t k = 0; k < m; k++)
                cr_assert_eq(yv[r * m + k], xv[r * dim + want[k]], "trial %d: %lld:%lld:%lld of %lld",
                             trial, (long long)start, (long long)end, (long long)step,
                             (long long)dim);
        y.dims[1] = m + 1; /* a shape that disagrees is refused */
        cr_assert(!plan_slice(n, &x, &y, in, &c, &why));
    }
    ir_graph_free(graph);
    graph = NULL;
}

Test(backend_plan, flattens_softmax_rows_at_the_axis_before_opset_13) {
    IrGraph *g = ir_graph_new("g");
    uint32_t id = ir_node_add(g, IR_OP_SOFTMAX, "sm", 1, 1, 0);
    IrNode *n = &g->nodes[id];
    IrType x = ir_type_tensor(IR_DTYPE_F32, 4, (int64_t[]){2, 3, 4, 5});
    PlanRows r;
    const char *why;
    n->opset = 13; /* axis -1 */
    cr_assert(plan_softmax_rows(n, &x, &r, &why));
    cr_expect(r.outer == 24 && r.len == 5 && r.inner == 1);
    n->opset = 11; /* axis 1, the rest flattened into the row */
    cr_assert(plan_softmax_rows(n, &x, &r, &why));
    cr_expect(r.outer == 2 && r.len == 60 && r.inner == 1);
    ir_graph_free(g);
}

/* ---- a bottleneck's conv3 and its downsample as one product (plan_pack_weights_f32) ---- */

/* Appends `const %NAME : f32[DIMS] = hex"..."` of n floats v[i] = (i % 13 - 6) / 8 + seed. */
static char *const_line(char *p, const char *name, const char *dims, float *v, int n, float seed) {
    p += sprintf(p, "  const %%%s : f32[%s] = hex\"", name, dims);
    for (int i = 0; i < n; i++) {
        unsigned char b[4];
        v[i] = (float)(i % 13 - 6) / 8.0f + seed;
        memcpy(b, &v[i], 4);
        for (int k = 0; k < 4; k++) p += sprintf(p, "%02x", b[k]);
    }
    return p + sprintf(p, "\"\n");
}

/* conv3 (1x1 16 -> 24 of %a, bias, Relu) + residual ds (1x1/S 32 -> 24 of %x (1,XH,XH,32),
 * bias); also_output: the residual is a graph output too (read twice). */
static float w3[16 * 24], b3[24], wd[32 * 24], bd[24];
static IrGraph *bottleneck(int S, int XH, bool also_output) {
    static char text[65536];
    char *p = text;
    int OH = (XH - 1) / S + 1;
    p += sprintf(p, "kiln-ir 1\nmodel ir_version=8\nopset \"\"=17, kiln=1\ngraph g {\n"
                    "  input %%a : f32[1,%d,%d,16]@nhwc\n  input %%x : f32[1,%d,%d,32]@nhwc\n",
                 OH, OH, XH, XH);
    p = const_line(p, "w3", "1,1,16,24", w3, 16 * 24, 0.25f);
    p = const_line(p, "b3", "24", b3, 24, 0.5f);
    p = const_line(p, "wd", "1,1,32,24", wd, 32 * 24, -0.125f);
    p = const_line(p, "bd", "24", bd, 24, 2.0f);
    p += sprintf(p,
                 "  %%r : f32[1,%d,%d,24]@nhwc = Conv(%%x, %%wd, %%bd) name=ds {kernel_shape=[1, 1], "
                 "strides=[%d, %d]}\n"
                 "  %%y : f32[1,%d,%d,24]@nhwc = FusedConv(%%a, %%w3, %%b3, %%r) domain=kiln "
                 "name=conv3 {activation=\"Relu\", kernel_shape=[1, 1]}\n  output %%y\n%s}\n",
                 OH, OH, S, S, OH, OH, also_output ? "  output %r\n" : "");
    Diag d;
    diag_init(&d);
    IrGraph *g = ir_parse(text, strlen(text), &d);
    if (!g) diag_print(&d, stderr, "parse");
    cr_assert_not_null(g);
    cr_assert(plan_pack_weights_f32(g, true, &d));
    diag_free(&d);
    return g;
}

static const IrNode *live_node(const IrGraph *g, const char *name) {
    for (uint32_t i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].dead && strcmp(g->nodes[i].name, name) == 0) return &g->nodes[i];
    return NULL;
}

Test(backend_plan, runs_a_bottleneck_downsample_inside_conv3_as_one_packed_product) {
    for (int S = 1; S <= 2; S++) {
        IrGraph *g = bottleneck(S, 8, false);
        const IrNode *n = live_node(g, "conv3");
        cr_assert_not_null(n);
        cr_assert_null(live_node(g, "ds"), "stride %d: the downsample is gone", S);
        cr_assert_eq(n->n_inputs, 5);
        cr_assert_eq(n->inputs[3], IR_NONE, "no residual left");
        cr_assert_str_eq(g->values[n->inputs[4]].name, "x");
        /* [W3; Wd] as (1, NP 2, 1, 1, 48, 16) panels, zeros past 24 columns */
        const IrValue *w = &g->values[n->inputs[1]];
        cr_assert_eq(w->type.rank, PLAN_PGEMM_RANK);
        cr_assert(w->type.dims[1] == 2 && w->type.dims[4] == 48 && w->type.dims[5] == 16);
        const float *wp = w->tensor->data;
        for (int p = 0; p < 2; p++)
            for (int k = 0; k < 48; k++)
                for (int j = 0; j < 16; j++) {
                    int m = p * 16 + j;
                    float want = m >= 24 ? 0.0f : k < 16 ? w3[k * 24 + m] : wd[(k - 16) * 24 + m];
                    cr_assert_eq(wp[(p * 48 + k) * 16 + j], want, "panel %d k %d j %d", p, k, j);
                }
        const float *b = g->values[n->inputs[2]].tensor->data;
        for (int m = 0; m < 24; m++) cr_assert_eq(b[m], b3[m] + bd[m]);
        ir_graph_free(g);
    }
}

Test(backend_plan, keeps_a_downsample_read_twice_or_whose_input_side_is_odd) {
    IrGraph *g = bottleneck(2, 8, true); /* its output is the graph's too */
    cr_assert_not_null(live_node(g, "ds"));
    cr_assert_eq(live_node(g, "conv3")->n_inputs, 4);
    ir_graph_free(g);
    g = bottleneck(2, 7, false); /* 7 -> 4: the stride is not the sides' ratio */
    cr_assert_not_null(live_node(g, "ds"));
    cr_assert_eq(live_node(g, "conv3")->n_inputs, 4);
    ir_graph_free(g);
}
