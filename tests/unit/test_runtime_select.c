/* bundle_runtime_select: a bundle ships the runtime items its code reaches, whole items in
 * their order, and nothing is lost when everything is reached. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "backend/bundle.h"

static void free_texts(char **t, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) free(t[i]);
    free(t);
}

Test(runtime_select, every_runtime_file_cuts_into_items_that_tile_its_text) {
    for (unsigned i = 0; i < bundle_n_runtime_files; i++) {
        const char *name = bundle_runtime_files[i].name;
        uint32_t n = bundle_runtime_items(bundle_runtime_files[i].text);
        cr_expect_geq(n, 3, "%s: %u items (the guard, its #endif and at least one more)", name, n);
    }
    cr_expect_eq(bundle_runtime_items("#ifndef KILN_RT_X_H\n#define KILN_RT_X_H\n#if A\n"), 0,
                 "an #if without its #endif does not cut");
}

Test(runtime_select, a_bundle_that_uses_one_pool_gets_that_family_and_not_the_others) {
    const char *names[] = {"rt_common.h", "rt_sum.h", "rt_pool.h"};
    const char *roots[] = {"rt_maxpool_nhwc_f32(&g, x, y);"};
    char **out = bundle_runtime_select(names, 3, roots, 1);
    cr_assert_not_null(out);
    const char *pool = out[2];
    cr_expect(strstr(pool, "#ifndef KILN_RT_POOL_H") && strstr(pool, "#endif"), "the guard stays");
    cr_expect(strstr(pool, "RT_POOL_DEFINE_NHWC(f32, float)") != NULL, "the NHWC f32 family");
    cr_expect(strstr(pool, "#define RT_POOL_DEFINE_NHWC") != NULL, "and its macro");
    cr_expect(strstr(pool, "RT_POOL_DEFINE_AVG(f16") == NULL, "no float16 average pools");
    cr_expect(strstr(pool, "#define RT_POOL_DEFINE_MAX") == NULL, "no NCHW max pool macro");
    /* the NHWC family (max, average and the global pools with their per-worker split) is
     * about half of the file; the NCHW and float16 families make up the rest */
    cr_expect(strlen(pool) < strlen(bundle_runtime_file("rt_pool.h")->text) * 2 / 3,
              "less than two thirds of rt_pool.h (%zu of %zu bytes)", strlen(pool),
              strlen(bundle_runtime_file("rt_pool.h")->text));
    free_texts(out, 3);
}

Test(runtime_select, what_a_kept_family_calls_in_another_file_is_kept_too) {
    /* the gemm family applies activations through rt_act_row_f32 (rt_act.h) */
    const char *names[] = {"rt_common.h", "rt_act.h", "rt_matmul.h"};
    const char *roots[] = {"rt_gemm_f32(&gemm);"};
    char **out = bundle_runtime_select(names, 3, roots, 1);
    cr_assert_not_null(out);
    cr_expect(strstr(out[2], "RT_GEMM_DEFINE(f32,") != NULL);
    cr_expect(strstr(out[1], "RT_ACT_DEFINE(f32,") != NULL, "the activations gemm calls");
    cr_expect(strstr(out[1], "RT_ACT_DEFINE(f64,") == NULL, "not their double twins");
    cr_expect(strstr(out[0], "#define RT_API") != NULL, "RT_API, which every kernel uses");
    free_texts(out, 3);
}

Test(runtime_select, nothing_used_leaves_the_guards_and_includes) {
    const char *names[] = {"rt_common.h", "rt_eltwise.h"};
    const char *roots[] = {"int main(void) { return 0; }"};
    char **out = bundle_runtime_select(names, 2, roots, 1);
    cr_assert_not_null(out);
    cr_expect(strstr(out[1], "#ifndef KILN_RT_ELTWISE_H") != NULL);
    cr_expect(strstr(out[1], "RT_API") == NULL, "no kernels: %s", out[1]);
    free_texts(out, 2);
}

Test(runtime_select, a_cuda_bundle_gets_the_kernel_templates_it_launches_and_not_the_others) {
    const char *names[] = {"kc_common.cuh", "kc_nn.cuh"};
    const char *roots[] = {"kc_softmax_kernel<float><<<g, b, 0, s>>>(x, y, 4, 10, 1, 0);"};
    char **out = bundle_runtime_select(names, 2, roots, 1);
    cr_assert_not_null(out);
    cr_expect(strstr(out[1], "#ifndef KILN_KC_NN_CUH") != NULL, "the guard");
    cr_expect(strstr(out[1], "kc_softmax_kernel(const T *x") != NULL, "the launched template");
    cr_expect(strstr(out[1], "template <typename T>\n__global__ void kc_softmax_kernel") != NULL,
              "with its template line: %s", out[1]);
    cr_expect(strstr(out[1], "kc_dwconv_nhwc_kernel") == NULL, "no depthwise: %s", out[1]);
    cr_expect(strstr(out[1], "kc_im2col_kernel") == NULL, "no im2col");
    cr_expect(strstr(out[0], "#ifndef KILN_KC_COMMON_CUH") != NULL, "kc_common.cuh's guard");
    cr_expect_lt(strlen(out[1]), strlen(bundle_runtime_file("kc_nn.cuh")->text) / 2);
    free_texts(out, 2);
}

Test(runtime_select, a_file_name_does_not_reach_the_function_of_its_stem) {
    const char *names[] = {"rt_common.h", "rt_cast.h"};
    const char *roots[] = {"#include \"rt_cast.h\"\nvoid f(void) { rt_cast_f16_f32(a, b, 4); }"};
    char **out = bundle_runtime_select(names, 2, roots, 1);
    cr_assert_not_null(out);
    cr_expect(strstr(out[1], "RT_CAST_DEFINE(f16_f32,") != NULL, "the typed loop: %s", out[1]);
    cr_expect(strstr(out[1], "RT_API void rt_cast(") == NULL, "not the generic cast: %s", out[1]);
    cr_expect(strstr(out[1], "rt_load_f64") == NULL, "nor its double accessors");
    free_texts(out, 2);
}

Test(runtime_select, a_comment_after_an_instantiation_ends_it) {
    const char *plain = "#ifndef KILN_RT_X_H\n#define KILN_RT_X_H\n#define D(S) void f_##S(void) {}\n"
                        "D(a)\nD(b)\n#endif\n";
    const char *commented = "#ifndef KILN_RT_X_H\n#define KILN_RT_X_H\n"
                            "#define D(S) void f_##S(void) {}\nD(a) /* the a twin */\nD(b)\n#endif\n";
    uint32_t n = bundle_runtime_items(plain);
    cr_expect_geq(n, 5, "guard, macro, two instantiations, #endif: %u", n);
    cr_expect_eq(bundle_runtime_items(commented), n, "a trailing comment does not join D(b) to D(a)");
}
