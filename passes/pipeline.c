/* The pass pipeline: the flat ordered list of passes. Optional passes can be switched off
 * by name (--no-pass=NAME, --passes=LIST, --passes=none); --dump-after=NAME prints the IR
 * after a pass. A pass that forms an op of its own (a fused pattern) runs only when the
 * target runs that op natively (PassOptions.op_native). Stage OPTIMIZE runs everything
 * before the backend checks kernels; stage PLAN runs the memory planner last. */
#include <string.h>

#include "passes/passes.h"

typedef struct PassEntry {
    const char *name;
    bool optional;
    int stage;
    bool (*run)(IrGraph *g, Diag *d);
    const char *summary;
    IrOp forms; /* the op the pass makes that only some targets run natively (UNKNOWN: none) */
} PassEntry;

static const PassEntry pipeline[] = {
    {"lower-constants", false, PASS_STAGE_OPTIMIZE, pass_lower_constants,
     "Constant nodes become initializers", IR_OP_UNKNOWN},
    {"lower-sequences", false, PASS_STAGE_OPTIMIZE, pass_lower_sequences,
     "sequences and optionals become tensors known at compile time", IR_OP_UNKNOWN},
    {"fold", true, PASS_STAGE_OPTIMIZE, pass_fold,
     "shape arithmetic on static shapes is computed at compile time", IR_OP_UNKNOWN},
    {"identity", true, PASS_STAGE_OPTIMIZE, pass_remove_identity,
     "Identity and Dropout that drops nothing (inference, ratio 0) are removed", IR_OP_UNKNOWN},
    {"lower-qoperator", true, PASS_STAGE_OPTIMIZE, pass_lower_qoperator,
     "QOperator nodes (QLinearConv, com.microsoft QGemm, QLinearAdd...) become "
     "DequantizeLinear, the float op, QuantizeLinear", IR_OP_UNKNOWN},
    {"fold-qdq", true, PASS_STAGE_OPTIMIZE, pass_fold_qdq,
     "QuantizeLinear/DequantizeLinear pairs become quantization parameters on the float "
     "values, dequantized weights keep their scales (the quantize pass's input)", IR_OP_QCONV},
    {"canonicalize", true, PASS_STAGE_OPTIMIZE, pass_canonicalize,
     "exporters' spellings of data movement become one (size-1 Transposes, view chains)",
     IR_OP_UNKNOWN},
    {"cse", true, PASS_STAGE_OPTIMIZE, pass_cse,
     "nodes with the same op, inputs and attributes are merged", IR_OP_UNKNOWN},
    {"fold-batchnorm", true, PASS_STAGE_OPTIMIZE, pass_fold_batchnorm,
     "BatchNormalization is folded into the Conv, ConvTranspose or Gemm weights before it", IR_OP_UNKNOWN},
    {"fuse-norm", true, PASS_STAGE_OPTIMIZE, pass_fuse_norm,
     "decomposed LayerNorm and RMSNorm become one normalization node", IR_OP_UNKNOWN},
    {"fuse-gelu", true, PASS_STAGE_OPTIMIZE, pass_fuse_gelu,
     "the Erf and tanh forms of GELU become one Gelu node", IR_OP_UNKNOWN},
    {"fuse-horizontal", true, PASS_STAGE_OPTIMIZE, pass_fuse_horizontal,
     "MatMuls (Gemms) reading one input with constant weights become one product and a Split",
     IR_OP_UNKNOWN},
    {"fuse-attention", true, PASS_STAGE_OPTIMIZE, pass_fuse_attention,
     "MatMul, scale, mask, Softmax, MatMul become one FusedAttention, transposes absorbed",
     IR_OP_FUSED_ATTENTION},
    {"fuse", true, PASS_STAGE_OPTIMIZE, pass_fuse,
     "Conv/Gemm/MatMul + bias + residual + activation become one fused node", IR_OP_UNKNOWN},
    {"layout", true, PASS_STAGE_OPTIMIZE, pass_layout,
     "convolution regions are stored channels-last (NHWC); transpose pairs cancel", IR_OP_UNKNOWN},
    {"quantize", true, PASS_STAGE_OPTIMIZE, pass_quantize,
     "values with quantization parameters run on int8 kernels (QConv, QGemm...), Q/DQ at "
     "the edges of float ops", IR_OP_QCONV},
    {"fuse-eltwise", true, PASS_STAGE_OPTIMIZE, pass_fuse_eltwise,
     "trees of elementwise ops become one FusedEltwise loop", IR_OP_FUSED_ELTWISE},
    {"dce", true, PASS_STAGE_OPTIMIZE, pass_dce, "nodes whose results nobody reads are removed", IR_OP_UNKNOWN},
    {"plan", false, PASS_STAGE_PLAN, pass_plan_memory_changed,
     "every intermediate gets an arena offset", IR_OP_UNKNOWN},
};
#define N_PASSES (sizeof pipeline / sizeof pipeline[0])

unsigned pass_count(void) { return (unsigned)N_PASSES; }

const char *pass_name(unsigned i, bool *optional, const char **summary) {
    if (i >= N_PASSES) return NULL;
    if (optional) *optional = pipeline[i].optional;
    if (summary) *summary = pipeline[i].summary;
    return pipeline[i].name;
}

bool pass_known(const char *name) {
    for (unsigned i = 0; i < N_PASSES; i++)
        if (strcmp(pipeline[i].name, name) == 0) return true;
    return false;
}

static bool fp16_all(IrGraph *g, Diag *d) { return pass_fp16(g, NULL, NULL, false, d); }

/* Passes outside the pipeline that a backend runs itself, by name for pass_run_named. */
static const PassEntry on_request[] = {
    {"fp16", true, PASS_STAGE_OPTIMIZE, fp16_all,
     "float32 values become float16 (the CUDA backend's --precision fp16)", IR_OP_UNKNOWN},
};
#define N_ON_REQUEST (sizeof on_request / sizeof on_request[0])

bool pass_run_named(IrGraph *g, const char *name, Diag *d, bool *changed) {
    for (unsigned i = 0; i < N_ON_REQUEST; i++)
        if (strcmp(on_request[i].name, name) == 0) {
            bool c = on_request[i].run(g, d);
            if (changed) *changed = c;
            return true;
        }
    for (unsigned i = 0; i < N_PASSES; i++)
        if (strcmp(pipeline[i].name, name) == 0) {
            bool c = pipeline[i].run(g, d);
            if (changed) *changed = c;
            return true;
        }
    return false;
}

static bool enabled(const PassOptions *o, const PassEntry *p) {
    if (!p->optional || !o) return true;
    if (p->forms != IR_OP_UNKNOWN && o->op_native && !o->op_native(p->forms)) return false;
    for (unsigned i = 0; i < o->n_disabled; i++)
        if (strcmp(o->disabled[i], p->name) == 0) return false;
    if (o->only_listed) {
        for (unsigned i = 0; i < o->n_enabled; i++)
            if (strcmp(o->enabled[i], p->name) == 0) return true;
        return false;
    }
    return true;
}

bool pass_pipeline_run(IrGraph *g, const PassOptions *o, int stage, Diag *d) {
    if (stage == PASS_STAGE_OPTIMIZE &&
        !pass_bind_seq_inputs(g, o ? o->seq_inputs : NULL, o ? o->n_seq_inputs : 0, d))
        return false;
    for (unsigned i = 0; i < N_PASSES; i++) {
        const PassEntry *p = &pipeline[i];
        /* --io-layout nhwc rides on the layout row: its boundary rewrite runs even when the
         * pass itself is off */
        bool io_nhwc = o && o->io_nhwc && p->run == pass_layout;
        if (p->stage != stage || (!enabled(o, p) && !io_nhwc)) continue;
        unsigned errors = d->n_errors;
        if (o && o->observe) o->observe(o->observe_arg, g, i, false);
        if (io_nhwc) pass_layout_io(g, true, enabled(o, p), d);
        else p->run(g, d);
        if (d->n_errors > errors) return false;
        if (o && o->observe) o->observe(o->observe_arg, g, i, true);
        if (o && o->dump_after && strcmp(o->dump_after, p->name) == 0 && o->dump_to)
            ir_print(o->dump_to, g, &(IrPrintOpts){.full_data = false});
    }
    return true;
}
