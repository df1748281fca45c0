/* The passes: one file each, run in the order of passes/pipeline.c. Each returns whether it
 * changed the graph (the planner: whether it succeeded) and states its contract. */
#ifndef KILN_PASSES_H
#define KILN_PASSES_H

#include "ir/ir.h"

#define PASS_ARENA_ALIGN 64 /* a cache line; also what AVX-512 and NEON loads like */
#define PASS_MAX_SEQ_ELEMS 65536 /* elements of one sequence kept at compile time */

/* Which optional passes run and where IR dumps go (the --no-pass, --passes and
 * --dump-after switches). */
typedef struct PassOptions {
    const char *const *disabled; /* names switched off */
    unsigned n_disabled;
    bool only_listed;            /* run only the optional passes in enabled */
    const char *const *enabled;
    unsigned n_enabled;
    const char *dump_after;      /* a pass name, or NULL */
    FILE *dump_to;
    const char *const *seq_inputs; /* --seq NAME=SPEC: see pass_bind_seq_inputs */
    unsigned n_seq_inputs;
    bool io_nhwc;                /* --io-layout nhwc: 4-D graph inputs/outputs are NHWC */
    /* The target's answer to "do you run op natively?" (NULL: every op). A pass whose
     * product the target lacks is skipped (fuse-attention without a FusedAttention kernel). */
    bool (*op_native)(IrOp op);
    /* Called before (after false) and after each pass that runs, with its index in the
     * pipeline (pass_name): kiln compile's progress line and --report's per-pass records.
     * NULL: nobody listens. */
    void (*observe)(void *arg, const IrGraph *g, unsigned pass, bool after);
    void *observe_arg;
} PassOptions;

enum { PASS_STAGE_OPTIMIZE = 0, PASS_STAGE_PLAN = 1 };

/* Runs the passes of one stage in pipeline order; false when one reported an error. */
bool pass_pipeline_run(IrGraph *g, const PassOptions *o, int stage, Diag *d);
unsigned pass_count(void);
const char *pass_name(unsigned i, bool *optional, const char **summary);
bool pass_known(const char *name);
/* Runs one pass by name (whatever its stage; the golden pass tests use this). False when
 * the name is unknown; *changed (if not NULL) says whether the pass changed the graph. */
bool pass_run_named(IrGraph *g, const char *name, Diag *d, bool *changed);

/* The runtime's RtActKind constant (runtime/rt_act.h) of a fused op's activation attribute
 * ("" -> "RT_ACT_NONE", "Relu" -> "RT_ACT_RELU"...), or NULL when unknown. */
const char *pass_act_c_name(const char *activation);

/* Helpers shared by the rewriting passes (passes/rewrite.c). */
bool pass_is_graph_output(const IrGraph *g, uint32_t v);
/* A constant f32 tensor of value v, or NULL. */
const IrTensor *pass_const_f32(const IrGraph *g, uint32_t v);
/* A new constant value of dtype f32 and the given shape, named after base (made unique);
 * its tensor is allocated (zeroed) in the graph arena and returned in *data. */
uint32_t pass_add_const_f32(IrGraph *g, const char *base, int rank, const int64_t *dims,
                            float **data);
/* Fresh f32 data for constant v: when exclusive (v's only reader is the node being
 * rewritten) v keeps its id and name and gets a new tensor of the given shape; otherwise a
 * new constant named after v is made. Either way the data (zeroed, in the graph arena) is
 * returned in *data, and the value id to read. */
uint32_t pass_rewrite_const_f32(IrGraph *g, uint32_t v, bool exclusive, const char *suffix,
                                int rank, const int64_t *dims, float **data);
/* name, or name + sep + N with the smallest N >= 1, whichever no value of g is named yet
 * (arena copy). */
const char *pass_fresh_name(IrGraph *g, const char *name, char sep);
/* base_k made fresh with '_' (the names of unrolled copies and sequence elements). */
const char *pass_indexed_name(IrGraph *g, const char *base, uint32_t k);
/* A tensor of dtype whose rank and dims shape inference fills in. */
IrType pass_untyped_tensor(uint8_t dtype);
/* A type for a copy of a value of type t: t itself when fully known, else an untyped tensor
 * of t's dtype (symbolic dims of a body mean one thing per copy). */
IrType pass_copy_type(const IrType *t);
/* The opset of the default domain the model imports: what a node a pass creates gets. */
int32_t pass_default_opset(const IrGraph *g);
/* base + suffix made fresh with '.' (pass_fresh_name). */
const char *pass_unique_name(IrGraph *g, const char *base, const char *suffix);
/* Replaces node `slot` with a fresh node of op (attribute slots from the op table, inputs
 * and outputs IR_NONE), keeping its place in the node order; returns the node. The old
 * node's output values lose their producer unless the caller reconnects them. */
IrNode *pass_replace_node(IrGraph *g, uint32_t slot, IrOp op, const char *name,
                          uint32_t n_inputs, uint32_t n_outputs);
/* A node order a pass builds for pass_reorder_nodes: node ids, appended; free(ids) after. */
typedef struct PassOrder {
    uint32_t *ids;
    uint32_t n, cap;
} PassOrder;
/* Appends node id to o (growing it). */
void pass_order_push(PassOrder *o, uint32_t id);
/* Puts the live nodes in `order` (node ids, a topological order, every live node once),
 * dead ones after them; producers follow, a dead producer's values lose it, and the dead
 * nodes are dropped (ir_graph_compact). */
void pass_reorder_nodes(IrGraph *g, const uint32_t *order, uint32_t n_order);
/* Sets output k of node id to value v (v's producer follows). */
void pass_set_output(IrGraph *g, uint32_t id, uint32_t k, uint32_t v);

/* The subgraph inliner (passes/inline.c): copies the live nodes of body b into g (b's
 * parent), appended to g's nodes for the caller to place, reading through map (b value id
 * -> g value id, IR_NONE until known; OUTER values map to what they read, constants become
 * constants of g, outputs to their copies as they are made). Copies are named NAME_iter.
 * each(arg, id) runs on every copy in order (NULL: none) and may stop the inlining. False,
 * with a reason in why (when not from each), for a body node with a subgraph or a read of a
 * value the body does not define. */
bool pass_inline_body(IrGraph *g, const IrGraph *b, uint32_t *map, uint32_t iter,
                      bool (*each)(void *arg, uint32_t id), void *arg, char *why,
                      size_t why_len);
/* Value v of body b as the inlining maps it into g (made on first use for OUTER values and
 * constants); IR_NONE for a value not yet copied. */
uint32_t pass_inline_value(IrGraph *g, const IrGraph *b, uint32_t *map, uint32_t v);

/* Pattern matching (passes/pattern.c), for the fuse-* passes. Per value: how many input
 * slots of live nodes read it, one such node, and whether a graph output or a subgraph
 * reads it too. Built once per pass run; callers re-check what they follow (dead nodes,
 * slots rewritten since). */
typedef struct PassUses {
    uint32_t *n_reads;
    uint32_t *reader;
    bool *ext;
    /* every reader: node[first[v] .. first[v] + n_reads[v]), in node order (a node reading
     * v twice is there twice) */
    uint32_t *first, *node;
} PassUses;
void pass_uses_build(const IrGraph *g, PassUses *u);
void pass_uses_free(PassUses *u);
/* The live node that alone reads v (once), v being no graph output; else IR_NONE. */
uint32_t pass_sole_reader(const IrGraph *g, const PassUses *u, uint32_t v);
/* The live node of op `op` whose first output is v, or IR_NONE. */
uint32_t pass_producer(const IrGraph *g, uint32_t v, IrOp op);
/* The end of a match: every matched node but `keep` (the fused node that replaced the
 * pattern's last) dies, and keep writes `out`, the pattern's result. */
void pass_retire_match(IrGraph *g, const uint32_t *nodes, uint32_t n_nodes, uint32_t keep,
                       uint32_t out);
/* The driver of the anchored fuse passes: fuse(g, uses, i) at every live node i present at
 * the start whose first output is a float32 value and that anchor accepts, over one
 * PassUses; the graph is compacted when something changed. Returns whether it did. */
typedef bool (*PassAnchorFn)(const IrNode *n);
typedef bool (*PassFuseAtFn)(IrGraph *g, const PassUses *u, uint32_t id);
bool pass_fuse_anchored(IrGraph *g, PassAnchorFn anchor, PassFuseAtFn fuse);
/* A one-element f32/f64 constant's value. */
bool pass_const_scalar(const IrGraph *g, uint32_t v, double *out);
/* x within the patterns' relative tolerance of want; a one-element constant near want. */
bool pass_near(double x, double want);
bool pass_const_near(const IrGraph *g, uint32_t v, double want);
/* The other input of a two-input node n next to v (IR_NONE if n reads v twice or not). */
uint32_t pass_other_input(const IrNode *n, uint32_t v);
/* Step k of FusedEltwise node f as a stand-alone node of the step's op, reading nothing and
 * carrying the step's attributes in slots (n_slots of them, zeroed here): what the C
 * backend asks for the step's expression. False when the step is malformed. */
bool pass_fused_eltwise_step(const IrNode *f, uint32_t k, IrNode *step, IrAttr *slots,
                             uint32_t n_slots);

/* Constant nodes become constant values. */
bool pass_lower_constants(IrGraph *g, Diag *d);
/* Shape arithmetic folded through partial evaluation. */
bool pass_fold(IrGraph *g, Diag *d);
/* Identity and Dropout that drops nothing (inference, or ratio 0) removed. */
bool pass_remove_identity(IrGraph *g, Diag *d);
/* Dead nodes removed. */
bool pass_dce(IrGraph *g, Diag *d);
/* Exporters' spellings of data movement brought to one form (passes/canonicalize.c):
 * Transposes of size-1 dims become Reshapes, view chains one Reshape, Transpose pairs one
 * Transpose, size-1 views move above Transposes and MatMuls, scalar Gathers read through
 * Transposes, Transposes of constants fold, spatial ReduceMean/Max become global pools. */
bool pass_canonicalize(IrGraph *g, Diag *d);
/* Common subexpressions merged: same op, inputs and attributes -> one node. */
bool pass_cse(IrGraph *g, Diag *d);
/* BatchNormalization folded into the weights of the Conv, ConvTranspose or Gemm before it. */
bool pass_fold_batchnorm(IrGraph *g, Diag *d);
/* ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div (then Mul gamma, Add beta) -> LayerNormalization;
 * Pow/ReduceMean/Add/Sqrt/Div (or Reciprocal-Mul), Mul gamma -> RMSNormalization. */
bool pass_fuse_norm(IrGraph *g, Diag *d);
/* x * 0.5 * (1 + Erf(x / sqrt 2)) and the tanh form, in the exporters' orderings -> Gelu. */
bool pass_fuse_gelu(IrGraph *g, Diag *d);
/* MatMul(Q, K^T), scale, optional additive mask, Softmax, MatMul(., V) -> FusedAttention,
 * absorbing the Transposes around it. */
bool pass_fuse_attention(IrGraph *g, Diag *d);
/* MatMuls (or Gemms) reading one input with constant weights of the same K become one
 * product of the weights side by side, their biases one Add, and a Split (passes/fuse_horizontal.c). */
bool pass_fuse_horizontal(IrGraph *g, Diag *d);
/* Conv/Gemm/MatMul + bias Add + residual Add + activation -> FusedConv/FusedGemm/FusedMatMul. */
bool pass_fuse(IrGraph *g, Diag *d);
/* Channels-last (passes/layout.c): 2-D convolutions and the layout-agnostic ops around them
 * store NHWC (IrType.layout NHWC, dims in storage order (N,H,W,C)); Conv weights rewritten
 * to (KH,KW,C/group,M); Transposes only at the region's boundary; Transpose pairs cancel.
 * requires: static shapes; invalidates: uses, node ids; preserves: quant params.
 * pass_layout_io: io_nhwc makes 4-D graph inputs and outputs NHWC (same names); propagate
 * false does only that boundary rewrite. */
bool pass_layout(IrGraph *g, Diag *d);
bool pass_layout_io(IrGraph *g, bool io_nhwc, bool propagate, Diag *d);
/* Pre-quantized models (passes/fold_qdq.c). lower-qoperator: QLinearConv, QLinearMatMul
 * and the com.microsoft QLinear ops / QGemm -> DequantizeLinear, float op, QuantizeLinear
 * (QLinearConv/QLinearMatMul on a graph input or output keep their reference kernels);
 * reruns shape inference. fold-qdq: QuantizeLinear -> DequantizeLinear pairs of per-tensor
 * parameters removed, the float value carrying them (IrValue.quant); DequantizeLinear of
 * constants folded, int8 weights keeping their scales. requires: constants lowered;
 * invalidates: uses, node ids. */
bool pass_lower_qoperator(IrGraph *g, Diag *d);
bool pass_fold_qdq(IrGraph *g, Diag *d);
/* Float nodes whose values carry quantization parameters -> int8 kernels (passes/quantize.c):
 * QConv, QGemm, QAdd, QMul, QLut, QMaxPool, QGlobalAveragePool; uint8 twins of the values,
 * QuantizeLinear/DequantizeLinear where float ops meet them. requires: layout; invalidates:
 * uses, node ids. */
bool pass_quantize(IrGraph *g, Diag *d);
/* Trees of float elementwise ops with single readers and one output shape -> FusedEltwise. */
bool pass_fuse_eltwise(IrGraph *g, Diag *d);
/* Sequences and optionals lowered to tensors at compile time (passes/lower_sequences.c):
 * container ops become tensor ops, SequenceMap and loops over sequences are unrolled, and
 * container graph outputs become one tensor output per element (NAME_0, NAME_1...). */
bool pass_lower_sequences(IrGraph *g, Diag *d);
/* Binds sequence and optional graph inputs before the passes: specs are "NAME=SPEC" with
 * SPEC element shapes "[d,...][d,...]" (one group per element), a count N (of the declared
 * static element shape) or "none" (an absent optional). A bound sequence becomes one tensor
 * input per element (NAME_0, NAME_1...) feeding a SequenceConstruct; a present optional
 * tensor input becomes a tensor input of the same name. False (with diagnostics) on a bad
 * spec. */
bool pass_bind_seq_inputs(IrGraph *g, const char *const *specs, unsigned n_specs, Diag *d);
/* Float16 storage (passes/fp16.c), for the CUDA backend's --precision fp16: float32 values
 * of the nodes keep accepts (NULL: every node without a subgraph) become float16, with
 * Casts where float16 and float32 meet; graph inputs and outputs stay float32 under their
 * names, or (io16) become float16 under their names. Not in the pipeline: the backend runs it after stage OPTIMIZE ("fp16" for
 * pass_run_named, with keep NULL). requires: static types; invalidates: node ids, uses. */
typedef bool (*PassFp16Keep)(const IrGraph *g, const IrNode *n, void *arg);
bool pass_fp16(IrGraph *g, PassFp16Keep keep, void *arg, bool io16, Diag *d);
/* pass_plan_memory in the pipeline's shape: always "changed". */
bool pass_plan_memory_changed(IrGraph *g, Diag *d);

/* Plans the arena: sets IrValue.mem_offset of every intermediate and the graph's arena
 * sizes (planned, lower bound, naive sum). False (with diagnostics) when a tensor that
 * needs space has no static shape. */
bool pass_plan_memory(IrGraph *g, Diag *d);
/* Whether the plan gives v space in the arena (an intermediate, not a graph output). */
bool pass_value_in_arena(const IrGraph *g, uint32_t v);

#endif
