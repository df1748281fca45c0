/* Internal interface of shape and type inference: the per-node context, the helpers that
 * per-op functions share (input types, constant inputs, dims, broadcasting), and the
 * per-op functions themselves, one family per ir/shape_*.c file. ir/shape.c holds the
 * driver and the table that maps op ids to these functions. */
#ifndef KILN_IR_SHAPE_H
#define KILN_IR_SHAPE_H

#include "ir.h"

/* Largest constant (in elements) that inference reads or partially evaluates: shape-like
 * tensors are short; anything bigger is data, not a shape. */
#define SHAPE_MAX_CONST_ELEMS 4096
/* Largest tensor that partial evaluation (Shape -> Gather -> Concat...) produces. */
#define SHAPE_MAX_KNOWN_ELEMS 64
/* Most elements of one inferred tensor: the frontend's cap on graph inputs and initializers
 * (ONNX_MAX_ELEMS). A bigger shape (Expand, ConstantOfShape, Pad, Tile, ConvTranspose...
 * of hostile constants) is refused, so that no element or byte count overflows int64. */
#define SHAPE_MAX_ELEMS (1LL << 40)

/* One dimension: a static size (v >= 0), else a symbol (sym > 0) or unknown. */
typedef struct ShapeDim {
    int64_t v;
    uint32_t sym;
} ShapeDim;

/* Inference state of one graph: values computed by partial evaluation, per value id. */
typedef struct ShapeGraphState {
    IrGraph *g;
    IrTensor **known;
    uint32_t n_known;
    struct ShapeGraphState *parent;
    bool fold; /* turn nodes whose outputs are all known into constants */
} ShapeGraphState;

/* The context of one node's inference. Per-op functions read inputs through the helpers
 * below and write out[0..n_out-1] (preset to unknown). */
typedef struct ShapeCtx {
    IrGraph *g;
    Diag *d;
    ShapeGraphState *st;
    uint32_t node_id;
    const IrNode *node;
    IrType *out;
    IrTensor **out_known; /* partial evaluation results per output, NULL: none */
    uint32_t n_out;
    bool failed;
} ShapeCtx;

typedef void (*ShapeFn)(ShapeCtx *c);

/* ---- helpers (ir/shape.c) ---- */

void shape_error(ShapeCtx *c, const char *fmt, ...) DIAG_PRINTF(2, 3);
int32_t shape_opset(const ShapeCtx *c);
const IrType *shape_in(const ShapeCtx *c, uint32_t i); /* NULL: absent */
bool shape_has_in(const ShapeCtx *c, uint32_t i);
int shape_rank(const ShapeCtx *c, uint32_t i);          /* -1: unknown or absent */
IrDType shape_dtype(const ShapeCtx *c, uint32_t i);     /* UNDEF: unknown or absent */
/* Constant tensor value of input i (initializer, Constant node output, or a result of
 * partial evaluation), or NULL. */
const IrTensor *shape_const(const ShapeCtx *c, uint32_t i);
const IrTensor *shape_value_const(const ShapeGraphState *st, uint32_t value);
/* Reads an integer (or bool) constant input as int64s; false when not constant, not
 * integer or larger than cap. */
bool shape_const_ints(const ShapeCtx *c, uint32_t i, int64_t *buf, uint32_t cap,
                      uint32_t *n);
bool shape_const_floats(const ShapeCtx *c, uint32_t i, double *buf, uint32_t cap,
                        uint32_t *n);
bool shape_tensor_ints(const IrTensor *t, int64_t *buf, uint32_t cap, uint32_t *n);
bool shape_tensor_floats(const IrTensor *t, double *buf, uint32_t cap, uint32_t *n);

IrType shape_unknown(void);
IrType shape_tensor(IrDType dtype, int rank); /* all dims unknown */
ShapeDim shape_dim(const IrType *t, int i);
void shape_set_dim(IrType *t, int i, ShapeDim d);
ShapeDim shape_dim_static(int64_t v);
ShapeDim shape_dim_unknown(void);
bool shape_dim_same(ShapeDim a, ShapeDim b); /* provably equal */
/* Normalizes axis against rank (negative counts from the end); reports and returns false
 * when out of range. */
bool shape_axis(ShapeCtx *c, int64_t axis, int rank, int *out);
/* Multidirectional (numpy) broadcast of a and b into out's shape; dtype untouched. */
bool shape_broadcast(ShapeCtx *c, const IrType *a, const IrType *b, IrType *out);
/* Records a partial-evaluation result for output slot i (int64 tensor). */
void shape_set_known(ShapeCtx *c, uint32_t i, IrTensor *t);
IrTensor *shape_new_i64(ShapeCtx *c, int rank, const int64_t *dims, const int64_t *vals);
/* Infers subgraph sub (an index into c->g->subgraphs) given its input types (merged into
 * the declared ones). Returns the subgraph, NULL on failure. */
IrGraph *shape_infer_subgraph(ShapeCtx *c, uint32_t sub, const IrType *in_types,
                              uint32_t n_in);
/* The most precise type that both a and b satisfy (If branches, loop-carried values,
 * sequence elements). */
IrType shape_union(IrArena *arena, const IrType *a, const IrType *b);
/* An arena copy of t, for IrType.elem. */
const IrType *shape_elem(ShapeCtx *c, const IrType *t);
/* "tensor(f32)[N,3]"-style text of t into buf. */
const char *ir_shape_type_str(const IrGraph *g, const IrType *t, char *buf, size_t size);
/* Merges inferred into declared: fills unknown parts; false on a conflict. */
bool ir_shape_merge(IrArena *a, IrType *declared, const IrType *inferred);

/* ---- partial evaluation of small values (ir/shape_eval.c) ---- */

/* A known value of at most SHAPE_MAX_KNOWN_ELEMS elements: integer and bool types in i,
 * f32/f64 in f (other element types are not evaluated). */
typedef struct ShapeVals {
    IrDType dtype;
    int rank;
    int64_t dims[IR_MAX_RANK];
    uint32_t n;
    bool is_float;
    int64_t i[SHAPE_MAX_KNOWN_ELEMS];
    double f[SHAPE_MAX_KNOWN_ELEMS];
} ShapeVals;

/* Reads t (or constant input i) into v; false when unknown, too big or of another type. */
bool shape_vals_of(const IrTensor *t, ShapeVals *v);
bool shape_in_vals(const ShapeCtx *c, uint32_t i, ShapeVals *v);
/* Empty values of dtype shaped as the static type t; false when t is not small and static. */
bool shape_vals_init(ShapeVals *v, IrDType dtype, const IrType *t);
/* Stores element k, converting from the other class (float to int truncates; false when
 * the value does not fit). */
bool shape_vals_put(ShapeVals *v, uint32_t k, bool from_float, int64_t i, double f);
IrTensor *shape_vals_tensor(ShapeCtx *c, const ShapeVals *v);
/* Records v as the partial-evaluation result of output slot i. */
void shape_set_known_vals(ShapeCtx *c, uint32_t i, const ShapeVals *v);
/* Evaluators, called once out[0] is inferred; each does nothing unless every input it
 * reads is known and out[0] is small and static. */
void shape_eval_eltwise(ShapeCtx *c);                   /* OPF_ELTWISE ops, casts, Where */
void shape_eval_reduce(ShapeCtx *c, const bool *reduced); /* Reduce{Sum,Prod,Max,Min} */
void shape_eval_relabel(ShapeCtx *c, uint32_t in); /* same elements, out[0]'s shape */
void shape_eval_expand(ShapeCtx *c);
void shape_eval_tile(ShapeCtx *c);
void shape_eval_concat(ShapeCtx *c, int axis);

/* Verifier with options (ir/verify.c); ir_verify is this with require_types false. */

/* ---- per-op functions ---- */

/* shape_elementwise.c */
void shape_same(ShapeCtx *c);
void shape_bcast(ShapeCtx *c);
void shape_bcast_bool(ShapeCtx *c);
void shape_variadic_bcast(ShapeCtx *c);
void shape_bool_same(ShapeCtx *c);
void shape_where(ShapeCtx *c);
void shape_cast(ShapeCtx *c);
void shape_cast_like(ShapeCtx *c);
void shape_quantize(ShapeCtx *c);
void shape_dequantize(ShapeCtx *c);
void shape_dyn_quantize(ShapeCtx *c);
void shape_dropout(ShapeCtx *c);
void shape_like_random(ShapeCtx *c);
void shape_random(ShapeCtx *c);
void shape_multinomial(ShapeCtx *c);
void shape_bitcast(ShapeCtx *c);
void shape_string_concat(ShapeCtx *c);
void shape_label_encoder(ShapeCtx *c);
void shape_eye_like(ShapeCtx *c);
void shape_optimizer(ShapeCtx *c);

/* shape_nn.c */
void shape_conv(ShapeCtx *c);
void shape_conv_integer(ShapeCtx *c);
void shape_qlinear_conv(ShapeCtx *c);
void shape_conv_transpose(ShapeCtx *c);
void shape_deform_conv(ShapeCtx *c);
void shape_pool(ShapeCtx *c);
void shape_global_pool(ShapeCtx *c);
void shape_max_unpool(ShapeCtx *c);
void shape_gemm(ShapeCtx *c);
void shape_matmul(ShapeCtx *c);
void shape_matmul_integer(ShapeCtx *c);
void shape_qlinear_matmul(ShapeCtx *c);
void shape_batch_norm(ShapeCtx *c);
void shape_layer_norm(ShapeCtx *c);
void shape_rnn(ShapeCtx *c);
void shape_attention(ShapeCtx *c);
void shape_roi_align(ShapeCtx *c);
void shape_max_roi_pool(ShapeCtx *c);
void shape_grid_sample(ShapeCtx *c);
void shape_affine_grid(ShapeCtx *c);
void shape_col2im(ShapeCtx *c);
void shape_depth_to_space(ShapeCtx *c);
void shape_space_to_depth(ShapeCtx *c);
void shape_einsum(ShapeCtx *c);
void shape_det(ShapeCtx *c);
void shape_linear_attention(ShapeCtx *c);
void shape_causal_conv_with_state(ShapeCtx *c);
void shape_flex_attention(ShapeCtx *c);

/* shape_tensor.c */
void shape_constant(ShapeCtx *c);
void shape_identity(ShapeCtx *c);
void shape_shape(ShapeCtx *c);
void shape_size(ShapeCtx *c);
void shape_reshape(ShapeCtx *c);
void shape_flatten(ShapeCtx *c);
void shape_transpose(ShapeCtx *c);
void shape_concat(ShapeCtx *c);
void shape_split(ShapeCtx *c);
void shape_slice(ShapeCtx *c);
void shape_gather(ShapeCtx *c);
void shape_gather_elements(ShapeCtx *c);
void shape_gather_nd(ShapeCtx *c);
void shape_squeeze(ShapeCtx *c);
void shape_unsqueeze(ShapeCtx *c);
void shape_expand(ShapeCtx *c);
void shape_pad(ShapeCtx *c);
void shape_tile(ShapeCtx *c);
void shape_constant_of_shape(ShapeCtx *c);
void shape_range(ShapeCtx *c);
void shape_resize(ShapeCtx *c);
void shape_top_k(ShapeCtx *c);
void shape_one_hot(ShapeCtx *c);
void shape_non_zero(ShapeCtx *c);
void shape_unique(ShapeCtx *c);
void shape_compress(ShapeCtx *c);
void shape_nms(ShapeCtx *c);
void shape_center_crop_pad(ShapeCtx *c);
void shape_window(ShapeCtx *c);
void shape_mel_weight_matrix(ShapeCtx *c);
void shape_dft(ShapeCtx *c);
void shape_stft(ShapeCtx *c);
void shape_string_split(ShapeCtx *c);
void shape_string_normalizer(ShapeCtx *c);
void shape_tfidf(ShapeCtx *c);
void shape_image_decoder(ShapeCtx *c);
void shape_tree_ensemble(ShapeCtx *c);
void shape_array_feature_extractor(ShapeCtx *c);

/* shape_reduce.c */
void shape_reduce(ShapeCtx *c);
void shape_arg_reduce(ShapeCtx *c);
void shape_nll_loss(ShapeCtx *c);
void shape_sce_loss(ShapeCtx *c);

/* shape_control.c */
void shape_if(ShapeCtx *c);
void shape_loop(ShapeCtx *c);
void shape_scan(ShapeCtx *c);
void shape_sequence_map(ShapeCtx *c);

/* shape_seq.c */
void shape_optional(ShapeCtx *c);
void shape_optional_get(ShapeCtx *c);
void shape_optional_has(ShapeCtx *c);
void shape_seq_empty(ShapeCtx *c);
void shape_seq_construct(ShapeCtx *c);
void shape_seq_same(ShapeCtx *c);
void shape_seq_at(ShapeCtx *c);
void shape_seq_length(ShapeCtx *c);
void shape_split_to_seq(ShapeCtx *c);
void shape_concat_from_seq(ShapeCtx *c);

#endif
