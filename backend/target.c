/* The table of targets the compile driver can write bundles for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cwriter.h"
#include "backend/target.h"

static const BackendTarget targets[] = {
    {"c", "%s.c", cgen_op_native, cgen_op_supported, NULL, NULL, cgen_prepare, cgen_check,
     cgen_emit_bundle},
    {"cuda", "%s.cu", cuda_op_native, cuda_op_supported, cuda_element_parallel, cuda_accepts,
     cuda_prepare, cuda_check, cuda_emit_bundle},
};
#define N_TARGETS (sizeof targets / sizeof targets[0])

const BackendTarget *backend_target(const char *name) {
    for (size_t i = 0; i < N_TARGETS; i++)
        if (strcmp(targets[i].name, name) == 0) return &targets[i];
    return NULL;
}

const char *backend_target_names(void) {
    static char names[64];
    if (!names[0])
        for (size_t i = 0; i < N_TARGETS; i++) {
            size_t len = strlen(names);
            snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", targets[i].name);
        }
    return names;
}

static const char *support_cell(const BackendTarget *t, IrOp op) {
    if (t->op_native(op)) return "native";
    if (!t->op_compiles(op)) return "-";
    return t->op_parallel && t->op_parallel(op) ? "fallback, parallel" : "fallback";
}

char *backend_support_table(void) {
    CWriter w;
    cw_init(&w);
    uint32_t n_native[N_TARGETS] = {0}, n_fallback[N_TARGETS] = {0}, n_par[N_TARGETS] = {0};
    uint32_t n_ops = 0;
    for (int op = 1; op < IR_OP_COUNT; op++) {
        n_ops++;
        for (size_t t = 0; t < N_TARGETS; t++) {
            n_native[t] += targets[t].op_native((IrOp)op);
            bool fb = !targets[t].op_native((IrOp)op) && targets[t].op_compiles((IrOp)op);
            n_fallback[t] += fb;
            n_par[t] += fb && targets[t].op_parallel && targets[t].op_parallel((IrOp)op);
        }
    }
    cw_raw(&w, "# Ops by target\n\n");
    cw_raw(&w, "Generated from ir/ops.def and the backends' emitter tables by\n"
               "`build/tests/support_table > docs/ops.md`; the unit test\n"
               "`tests/unit/test_backend_support.c` fails when this file and the code differ.\n\n");
    cw_raw(&w, "native: a kernel of the target's own. fallback: compiled by another path (CUDA's\n"
               "generic path: the C kernel on one device thread, which `kiln compile` names in a\n"
               "warning). fallback, parallel: the C kernel loops over its output elements\n"
               "(RT_FOR_EACH), so the generic path runs it on one device thread per element, with\n"
               "no warning. -: no kernel on the target. Constant and the sequence and optional\n"
               "ops have none because the passes fold or lower them before a backend sees them;\n"
               "a model that keeps another op marked - does not compile for that target. Ops of\n"
               "domain `kiln` are the ones the passes form. The `com.microsoft` ops (ONNX\n"
               "Runtime's QOperator format) have none either: the lower-qoperator pass turns\n"
               "them into DequantizeLinear, the float op and QuantizeLinear (docs/int8.md).\n\n");
    for (size_t t = 0; t < N_TARGETS; t++)
        cw_raw(&w, "- `%s`: %u native, %u fallback (%u parallel), %u refused, of %u ops\n",
               targets[t].name, n_native[t], n_fallback[t], n_par[t],
               n_ops - n_native[t] - n_fallback[t], n_ops);
    cw_raw(&w, "\n| domain | op | since |");
    for (size_t t = 0; t < N_TARGETS; t++) cw_raw(&w, " %s |", targets[t].name);
    cw_raw(&w, "\n|---|---|---|");
    for (size_t t = 0; t < N_TARGETS; t++) cw_raw(&w, "---|");
    cw_raw(&w, "\n");
    for (int op = 1; op < IR_OP_COUNT; op++) {
        const IrOpInfo *info = ir_op_info((IrOp)op);
        cw_raw(&w, "| %s | %s | %d |", info->domain[0] ? info->domain : "ai.onnx", info->name,
               (int)info->since_version);
        for (size_t t = 0; t < N_TARGETS; t++) cw_raw(&w, " %s |", support_cell(&targets[t], (IrOp)op));
        cw_raw(&w, "\n");
    }
    return w.buf; /* the writer's buffer, now the caller's */
}
