/* Unit tests of the compile driver (driver/kiln.c): it runs the whole pipeline for a named
 * target, refuses unknown targets and options a target cannot honour before doing any work,
 * and lets the target's op_native decide which fused patterns the passes may form. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver/kiln.h"

/* x - b, * c, LeakyRelu, Exp: an elementwise tree that fuse-eltwise turns into one node */
static const char chain_ir[] =
    "kiln-ir 1\n"
    "model ir_version=8\n"
    "opset \"\"=17\n"
    "graph g {\n"
    "  input %x : f32[2,3]\n"
    "  input %b : f32[3]\n"
    "  const %c : f32[] = hex\"000000bf\"\n"
    "  %a : f32[2,3] = Sub(%x, %b) name=sub\n"
    "  %m : f32[2,3] = Mul(%a, %c) name=mul\n"
    "  %l : f32[2,3] = LeakyRelu(%m) name=leaky {alpha=0.2}\n"
    "  %y : f32[2,3] = Exp(%l) name=exp\n"
    "  output %y\n"
    "}\n";

static IrGraph *parse(const char *text) {
    Diag d;
    diag_init(&d);
    IrGraph *g = ir_parse(text, strlen(text), &d);
    if (!g) diag_print(&d, stderr, "parse");
    cr_assert_not_null(g);
    diag_free(&d);
    return g;
}

static uint32_t count_op(const IrGraph *g, IrOp op) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) n += !g->nodes[i].dead && g->nodes[i].op == op;
    return n;
}

static bool exists(const char *dir, const char *file) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    struct stat st;
    return stat(path, &st) == 0;
}

static char *fresh_dir(void) {
    char *dir = strdup("/tmp/kiln-driver-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    return dir;
}

static void remove_dir(char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
    free(dir);
}

static bool has_message(const Diag *d, const char *needle) {
    for (unsigned i = 0; i < d->n_msgs; i++)
        if (strstr(d->msgs[i].text, needle)) return true;
    return false;
}

Test(kiln_driver, compiles_a_graph_into_a_c_bundle) {
    IrGraph *g = parse(chain_ir);
    char *dir = fresh_dir();
    BundleOptions o = {.name = "m", .test_main = true};
    Diag d;
    diag_init(&d);
    bool ok = kiln_compile_graph(g, "c", &o, dir, &d);
    if (!ok) diag_print(&d, stderr, "compile");
    cr_assert(ok);
    cr_expect(exists(dir, "m.h") && exists(dir, "m.c") && exists(dir, "m_weights.bin") &&
              exists(dir, "m_test_main.c") && exists(dir, "CMakeLists.txt"));
    cr_expect_eq(count_op(g, IR_OP_FUSED_ELTWISE), 1, "the C target runs FusedEltwise natively");
    cr_expect(g->arena_size_bytes >= 0);
    diag_free(&d);
    ir_graph_free(g);
    remove_dir(dir);
}

Test(kiln_driver, refuses_an_unknown_target_naming_the_known_ones) {
    IrGraph *g = parse(chain_ir);
    BundleOptions o = {.name = "m"};
    Diag d;
    diag_init(&d);
    cr_assert(!kiln_compile_graph(g, "fpga", &o, "/nonexistent", &d));
    cr_expect(has_message(&d, "unknown target 'fpga'"));
    cr_expect(has_message(&d, kiln_targets()));
    cr_expect(!kiln_target_known("fpga") && kiln_target_known("c") && kiln_target_known("cuda"));
    diag_free(&d);
    ir_graph_free(g);
}

Test(kiln_driver, refuses_options_the_target_cannot_honour_before_any_pass_runs) {
    IrGraph *g = parse(chain_ir);
    uint32_t nodes = g->n_nodes;
    BundleOptions o = {.name = "m", .embed_weights = true};
    Diag d;
    diag_init(&d);
    cr_assert(!kiln_compile_graph(g, "cuda", &o, "/nonexistent", &d));
    cr_expect(has_message(&d, "--weights embed"));
    cr_expect_eq(g->n_nodes, nodes, "a pass ran before the options were checked");
    diag_free(&d);
    ir_graph_free(g);
}

static bool no_fused_eltwise(IrOp op) { return op != IR_OP_FUSED_ELTWISE; }

Test(kiln_driver, skips_a_pass_whose_product_the_target_does_not_run_natively) {
    IrGraph *g = parse(chain_ir);
    Diag d;
    diag_init(&d);
    PassOptions po = {.op_native = no_fused_eltwise};
    cr_assert(pass_pipeline_run(g, &po, PASS_STAGE_OPTIMIZE, &d));
    cr_expect_eq(count_op(g, IR_OP_FUSED_ELTWISE), 0);
    cr_expect_eq(count_op(g, IR_OP_EXP), 1);
    ir_graph_free(g);
    g = parse(chain_ir);
    po.op_native = NULL; /* every op native: the pass runs */
    cr_assert(pass_pipeline_run(g, &po, PASS_STAGE_OPTIMIZE, &d));
    cr_expect_eq(count_op(g, IR_OP_FUSED_ELTWISE), 1);
    diag_free(&d);
    ir_graph_free(g);
}

Test(kiln_driver, compiles_for_cuda_without_forming_patterns_cuda_lacks) {
    IrGraph *g = parse(chain_ir);
    char *dir = fresh_dir();
    BundleOptions o = {.name = "m"};
    Diag d;
    diag_init(&d);
    bool ok = kiln_compile_graph(g, "cuda", &o, dir, &d);
    if (!ok) diag_print(&d, stderr, "compile");
    cr_assert(ok);
    cr_expect(exists(dir, "m.cu") && exists(dir, "m.h"));
    cr_expect_eq(count_op(g, IR_OP_FUSED_ELTWISE), 0,
                 "CUDA has no FusedEltwise kernel of its own: the pass must not run");
    diag_free(&d);
    ir_graph_free(g);
    remove_dir(dir);
}
