/* Unit tests of kiln validate's figures (cli/validate_figures.c, compiled in here with the
 * JSON writer it uses): the worst element named is one that failed, failing elements are
 * counted and listed over every sample, comparisons that prove little are flagged, and the
 * per-node ranking names the node whose error grew, not merely the first over tolerance. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "../../cli/json.c"
#include "../../cli/validate_figures.c"

static ValidateOpts opts(double rtol, double atol) {
    ValidateOpts o;
    memset(&o, 0, sizeof o);
    o.rtol = rtol;
    o.atol = atol;
    return o;
}

static IrType f32_type(int rank, const int64_t *dims) {
    return ir_type_tensor(IR_DTYPE_F32, rank, dims);
}

static void compare_f32(const IrType *t, const float *a, const float *b, int64_t s,
                        const ValidateOpts *o, bool scores, ValidateFigures *f) {
    validate_compare(t, (const unsigned char *)a, (const unsigned char *)b, s, o, scores, f);
}

/* rtol 1e-3: a large value off by 0.05 (|ref| 100: allowed 0.1) passes; a small one off by
 * 0.01 (allowed 0.001) fails. The worst element is the failing one. */
Test(validate_figures, names_a_failing_element_as_the_worst_not_the_largest_error) {
    ValidateOpts o = opts(1e-3, 0);
    int64_t dims[2] = {2, 3};
    IrType t = f32_type(2, dims);
    float ref[6] = {100, 1, 2, 3, 4, 5}, got[6] = {100.05f, 1.01f, 2, 3, 4, 5};
    ValidateFigures f;
    validate_figures_init(&f);
    compare_f32(&t, got, ref, 0, &o, false, &f);
    cr_assert_eq(f.n_bad, 1);
    cr_assert_eq(f.n_worst, 1);
    cr_assert_eq(f.worst[0].index, 1, "worst is element %lld", (long long)f.worst[0].index);
    cr_assert_eq(f.max_index, 0, "the largest error is element 0, which passes");
    cr_assert(fabs(f.worst[0].ratio - 10) < 0.01, "ratio %g", f.worst[0].ratio);
}

Test(validate_figures, counts_failures_and_keeps_the_worst_over_every_sample) {
    ValidateOpts o = opts(0, 0.5);
    int64_t dims[1] = {4};
    IrType t = f32_type(1, dims);
    float ref[4] = {0, 0, 0, 0}, s0[4] = {0, 1, 0, 0}, s1[4] = {0, 0, 0, 0}, s2[4] = {3, 2, 0, 0};
    ValidateFigures f;
    validate_figures_init(&f);
    compare_f32(&t, s0, ref, 0, &o, false, &f);
    compare_f32(&t, s1, ref, 1, &o, false, &f);
    compare_f32(&t, s2, ref, 2, &o, false, &f);
    cr_assert_eq(f.n, 12);
    cr_assert_eq(f.n_bad, 3);
    cr_assert_eq(f.samples, 3);
    cr_assert_eq(f.samples_bad, 2);
    cr_assert(!f.pass);
    cr_assert_eq(f.n_worst, 3);
    cr_assert(f.worst[0].sample == 2 && f.worst[0].index == 0, "worst first: error 3");
    cr_assert(f.worst[1].sample == 2 && f.worst[1].index == 1);
    cr_assert(f.worst[2].sample == 0 && f.worst[2].index == 1);
}

Test(validate_figures, rates_top1_agreement_over_every_row_of_every_sample) {
    ValidateOpts o = opts(1e-3, 1e-4);
    int64_t dims[2] = {2, 3};
    IrType t = f32_type(2, dims);
    float ref[6] = {0.1f, 0.8f, 0.1f, 0.5f, 0.2f, 0.3f};
    float a[6] = {0.1f, 0.8f, 0.1f, 0.5f, 0.2f, 0.3f}, b[6] = {0.1f, 0.8f, 0.1f, 0.2f, 0.5f, 0.3f};
    ValidateFigures f;
    validate_figures_init(&f);
    compare_f32(&t, a, ref, 0, &o, true, &f);
    compare_f32(&t, b, ref, 1, &o, true, &f);
    cr_assert(f.classifier);
    cr_assert_eq(f.rows, 4);
    cr_assert_eq(f.top1, 3);
}

Test(validate_figures, warns_when_the_comparison_proves_little) {
    ValidateOpts o = opts(1e-3, 1e-4);
    int64_t dims[1] = {3};
    IrType t = f32_type(1, dims);
    char buf[VALIDATE_MSG_MAX];
    float zeros[3] = {0, 0, 0}, tiny[3] = {1e-5f, -2e-5f, 3e-5f}, same[3] = {0.5f, 0.5f, 0.5f};
    float varied[3] = {0.5f, -1, 2};
    ValidateFigures f;
    validate_figures_init(&f);
    compare_f32(&t, zeros, zeros, 0, &o, false, &f);
    cr_assert(validate_vacuous(&f, &o, buf, sizeof buf) && strstr(buf, "0 on both sides"), "%s",
              buf);
    validate_figures_init(&f);
    compare_f32(&t, tiny, tiny, 0, &o, false, &f);
    cr_assert(validate_vacuous(&f, &o, buf, sizeof buf) && strstr(buf, "within atol"), "%s", buf);
    validate_figures_init(&f);
    compare_f32(&t, same, same, 0, &o, false, &f);
    cr_assert(validate_vacuous(&f, &o, buf, sizeof buf) && strstr(buf, "constant"), "%s", buf);
    validate_figures_init(&f);
    compare_f32(&t, varied, varied, 0, &o, false, &f);
    cr_assert_null(validate_vacuous(&f, &o, buf, sizeof buf));
    int64_t none[1] = {0};
    IrType empty = f32_type(1, none);
    validate_figures_init(&f);
    compare_f32(&empty, NULL, NULL, 0, &o, false, &f);
    cr_assert(validate_vacuous(&f, &o, buf, sizeof buf) && strstr(buf, "no elements"));
}

/* x -> pre -> a -> mean -> b -> sub -> c: mean grows the error 70x and stays within the
 * tolerance; sub passes it on (x1.5) onto a small element, out of tolerance: sub is the
 * first divergence, mean the likely cause (the old report named only sub). */
Test(validate_figures, ranks_nodes_by_error_growth_and_names_the_likely_cause) {
    IrGraph *g = ir_graph_new("t");
    int64_t dims[1] = {4};
    IrType t = f32_type(1, dims);
    uint32_t x = ir_value_add(g, "x", &t, IR_VALUE_INPUT), a = ir_value_add(g, "a", &t, IR_VALUE_NODE);
    uint32_t b = ir_value_add(g, "b", &t, IR_VALUE_NODE), c = ir_value_add(g, "c", &t, IR_VALUE_NODE);
    uint32_t in_a[1] = {x}, out_a[1] = {a}, in_b[1] = {a}, out_b[1] = {b}, in_c[1] = {b},
             out_c[1] = {c};
    ValidateNode nodes[3] = {{"pre", "Relu", "", 13, in_a, 1, out_a, 1, 0, 0, 0},
                             {"mean", "ReduceMean", "", 13, in_b, 1, out_b, 1, 0, 0, 0},
                             {"sub", "Sub", "", 13, in_c, 1, out_c, 1, 0, 0, 0}};
    ValidateOpts o = opts(1e-3, 1e-6);
    o.per_node = true;
    uint32_t values[3] = {a, b, c};
    ValidateFigures fig[3];
    for (int i = 0; i < 3; i++) validate_figures_init(&fig[i]);
    float ref[4] = {1, 1, 1, 1}, ref_c[4] = {1, 1e-3f, 1, 1};
    float ga[4] = {1, 1, 1, 1};                 /* exact */
    float gb[4] = {1 + 70 * 6e-8f, 1, 1, 1};    /* 70 roundings of 1: within tolerance */
    float gc[4] = {1, 1e-3f + 6.3e-6f, 1, 1};   /* 1.5x that error, on a small element:
                                                   out of tolerance (allowed 2e-6) */
    compare_f32(&t, ga, ref, 0, &o, false, &fig[0]);
    compare_f32(&t, gb, ref, 0, &o, false, &fig[1]);
    compare_f32(&t, gc, ref_c, 0, &o, false, &fig[2]);
    ValidateRun r = {&o, g, "ort", 3, 1, values, fig, nodes, 3, 1, -1, -1};
    r.n_orig = 0; /* all three are intermediates here */
    validate_rank_nodes(&r);
    cr_assert_eq(r.first, 2, "first divergence %d", r.first);
    cr_assert_eq(nodes[0].growth, 0);
    cr_assert(nodes[1].growth > 60 && nodes[1].growth < 80, "growth %g", nodes[1].growth);
    cr_assert_eq(r.likely, 1, "likely cause %d", r.likely);
    ir_graph_free(g);
}
