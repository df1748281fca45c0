/* Shape and type inference driver: walks each graph's nodes in order (subgraphs through
 * their owning node), calls the op's function from shape_table, and merges its result into
 * the type already on each output (declared by the model): unknown parts are filled, a
 * static dim beats a symbolic one, and two known facts that disagree are an error naming
 * the node. Also the helpers shared by the per-op functions in ir/shape_*.c. */
#include "shape.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The inference of each op. An elementwise op (OPF_ELTWISE in ops.def) without an entry
 * keeps its input's type (shape_same) or, broadcasting (OPF_BCAST), the broadcast of its
 * inputs' (shape_bcast): only the elementwise ops that differ are listed. Other ops without
 * an entry keep their declared types. */
static const ShapeFn shape_table[IR_OP_COUNT] = {
    /* same type as the first input */
    [IR_OP_CUM_PROD] = shape_same, [IR_OP_CUM_SUM] = shape_same, [IR_OP_HARDMAX] = shape_same,
    [IR_OP_LOG_SOFTMAX] = shape_same, [IR_OP_SHRINK] = shape_same, [IR_OP_SOFTMAX] = shape_same,
    [IR_OP_TRILU] = shape_same, [IR_OP_LRN] = shape_same, [IR_OP_LP_NORMALIZATION] = shape_same,
    [IR_OP_MEAN_VARIANCE_NORMALIZATION] = shape_same,
    [IR_OP_INSTANCE_NORMALIZATION] = shape_same, [IR_OP_GROUP_NORMALIZATION] = shape_same,
    [IR_OP_RMSNORMALIZATION] = shape_same, [IR_OP_REVERSE_SEQUENCE] = shape_same,
    [IR_OP_SCATTER] = shape_same, [IR_OP_SCATTER_ELEMENTS] = shape_same,
    [IR_OP_SCATTER_ND] = shape_same, [IR_OP_TENSOR_SCATTER] = shape_same,
    [IR_OP_ROTARY_EMBEDDING] = shape_same, [IR_OP_BINARIZER] = shape_same,
    /* elementwise with a result of another type, and variadic */
    [IR_OP_AND] = shape_bcast_bool, [IR_OP_OR] = shape_bcast_bool,
    [IR_OP_XOR] = shape_bcast_bool, [IR_OP_EQUAL] = shape_bcast_bool,
    [IR_OP_GREATER] = shape_bcast_bool, [IR_OP_GREATER_OR_EQUAL] = shape_bcast_bool,
    [IR_OP_LESS] = shape_bcast_bool, [IR_OP_LESS_OR_EQUAL] = shape_bcast_bool,
    [IR_OP_MAX] = shape_variadic_bcast, [IR_OP_MIN] = shape_variadic_bcast,
    [IR_OP_SUM] = shape_variadic_bcast, [IR_OP_MEAN] = shape_variadic_bcast,
    [IR_OP_IS_INF] = shape_bool_same, [IR_OP_IS_NAN] = shape_bool_same,
    [IR_OP_REGEX_FULL_MATCH] = shape_bool_same, [IR_OP_STRING_CONCAT] = shape_string_concat,
    [IR_OP_WHERE] = shape_where, [IR_OP_CAST] = shape_cast, [IR_OP_CAST_LIKE] = shape_cast_like,
    [IR_OP_QUANTIZE_LINEAR] = shape_quantize, [IR_OP_DEQUANTIZE_LINEAR] = shape_dequantize,
    [IR_OP_DYNAMIC_QUANTIZE_LINEAR] = shape_dyn_quantize, [IR_OP_DROPOUT] = shape_dropout,
    [IR_OP_BERNOULLI] = shape_like_random, [IR_OP_RANDOM_NORMAL_LIKE] = shape_like_random,
    [IR_OP_RANDOM_UNIFORM_LIKE] = shape_like_random, [IR_OP_RANDOM_NORMAL] = shape_random,
    [IR_OP_RANDOM_UNIFORM] = shape_random, [IR_OP_MULTINOMIAL] = shape_multinomial,
    [IR_OP_BIT_CAST] = shape_bitcast, [IR_OP_LABEL_ENCODER] = shape_label_encoder,
    [IR_OP_EYE_LIKE] = shape_eye_like, [IR_OP_ADAGRAD] = shape_optimizer,
    [IR_OP_ADAM] = shape_optimizer, [IR_OP_MOMENTUM] = shape_optimizer,
    /* neural network */
    [IR_OP_CONV] = shape_conv, [IR_OP_CONV_INTEGER] = shape_conv_integer,
    [IR_OP_QLINEAR_CONV] = shape_qlinear_conv, [IR_OP_CONV_TRANSPOSE] = shape_conv_transpose,
    [IR_OP_DEFORM_CONV] = shape_deform_conv, [IR_OP_MAX_POOL] = shape_pool,
    [IR_OP_AVERAGE_POOL] = shape_pool, [IR_OP_LP_POOL] = shape_pool,
    [IR_OP_GLOBAL_AVERAGE_POOL] = shape_global_pool, [IR_OP_GLOBAL_MAX_POOL] = shape_global_pool,
    [IR_OP_GLOBAL_LP_POOL] = shape_global_pool, [IR_OP_MAX_UNPOOL] = shape_max_unpool,
    [IR_OP_GEMM] = shape_gemm, [IR_OP_MAT_MUL] = shape_matmul,
    [IR_OP_MAT_MUL_INTEGER] = shape_matmul_integer, [IR_OP_QLINEAR_MAT_MUL] = shape_qlinear_matmul,
    [IR_OP_BATCH_NORMALIZATION] = shape_batch_norm, [IR_OP_LAYER_NORMALIZATION] = shape_layer_norm,
    [IR_OP_RNN] = shape_rnn, [IR_OP_GRU] = shape_rnn, [IR_OP_LSTM] = shape_rnn,
    [IR_OP_ATTENTION] = shape_attention, [IR_OP_ROI_ALIGN] = shape_roi_align,
    [IR_OP_MAX_ROI_POOL] = shape_max_roi_pool, [IR_OP_GRID_SAMPLE] = shape_grid_sample,
    [IR_OP_AFFINE_GRID] = shape_affine_grid, [IR_OP_COL2_IM] = shape_col2im,
    [IR_OP_DEPTH_TO_SPACE] = shape_depth_to_space, [IR_OP_SPACE_TO_DEPTH] = shape_space_to_depth,
    [IR_OP_EINSUM] = shape_einsum, [IR_OP_DET] = shape_det,
    [IR_OP_LINEAR_ATTENTION] = shape_linear_attention,
    [IR_OP_CAUSAL_CONV_WITH_STATE] = shape_causal_conv_with_state,
    [IR_OP_FLEX_ATTENTION] = shape_flex_attention,
    /* tensor manipulation */
    [IR_OP_CONSTANT] = shape_constant, [IR_OP_IDENTITY] = shape_identity,
    [IR_OP_SHAPE] = shape_shape, [IR_OP_SIZE] = shape_size, [IR_OP_RESHAPE] = shape_reshape,
    [IR_OP_FLATTEN] = shape_flatten, [IR_OP_TRANSPOSE] = shape_transpose,
    [IR_OP_CONCAT] = shape_concat, [IR_OP_SPLIT] = shape_split, [IR_OP_SLICE] = shape_slice,
    [IR_OP_GATHER] = shape_gather, [IR_OP_GATHER_ELEMENTS] = shape_gather_elements,
    [IR_OP_GATHER_ND] = shape_gather_nd, [IR_OP_SQUEEZE] = shape_squeeze,
    [IR_OP_UNSQUEEZE] = shape_unsqueeze, [IR_OP_EXPAND] = shape_expand, [IR_OP_PAD] = shape_pad,
    [IR_OP_TILE] = shape_tile, [IR_OP_CONSTANT_OF_SHAPE] = shape_constant_of_shape,
    [IR_OP_RANGE] = shape_range, [IR_OP_RESIZE] = shape_resize, [IR_OP_UPSAMPLE] = shape_resize,
    [IR_OP_TOP_K] = shape_top_k, [IR_OP_ONE_HOT] = shape_one_hot,
    [IR_OP_NON_ZERO] = shape_non_zero, [IR_OP_UNIQUE] = shape_unique,
    [IR_OP_COMPRESS] = shape_compress, [IR_OP_NON_MAX_SUPPRESSION] = shape_nms,
    [IR_OP_CENTER_CROP_PAD] = shape_center_crop_pad, [IR_OP_HANN_WINDOW] = shape_window,
    [IR_OP_HAMMING_WINDOW] = shape_window, [IR_OP_BLACKMAN_WINDOW] = shape_window,
    [IR_OP_MEL_WEIGHT_MATRIX] = shape_mel_weight_matrix, [IR_OP_DFT] = shape_dft,
    [IR_OP_STFT] = shape_stft, [IR_OP_STRING_SPLIT] = shape_string_split,
    [IR_OP_STRING_NORMALIZER] = shape_string_normalizer, [IR_OP_TF_IDF_VECTORIZER] = shape_tfidf,
    [IR_OP_IMAGE_DECODER] = shape_image_decoder, [IR_OP_TREE_ENSEMBLE] = shape_tree_ensemble,
    [IR_OP_ARRAY_FEATURE_EXTRACTOR] = shape_array_feature_extractor,
    /* reductions and losses */
    [IR_OP_REDUCE_L1] = shape_reduce, [IR_OP_REDUCE_L2] = shape_reduce,
    [IR_OP_REDUCE_LOG_SUM] = shape_reduce, [IR_OP_REDUCE_LOG_SUM_EXP] = shape_reduce,
    [IR_OP_REDUCE_MAX] = shape_reduce, [IR_OP_REDUCE_MEAN] = shape_reduce,
    [IR_OP_REDUCE_MIN] = shape_reduce, [IR_OP_REDUCE_PROD] = shape_reduce,
    [IR_OP_REDUCE_SUM] = shape_reduce, [IR_OP_REDUCE_SUM_SQUARE] = shape_reduce,
    [IR_OP_ARG_MAX] = shape_arg_reduce, [IR_OP_ARG_MIN] = shape_arg_reduce,
    [IR_OP_NEGATIVE_LOG_LIKELIHOOD_LOSS] = shape_nll_loss,
    [IR_OP_SOFTMAX_CROSS_ENTROPY_LOSS] = shape_sce_loss,
    /* control flow, sequences, optionals */
    [IR_OP_IF] = shape_if, [IR_OP_LOOP] = shape_loop, [IR_OP_SCAN] = shape_scan,
    [IR_OP_SEQUENCE_MAP] = shape_sequence_map, [IR_OP_OPTIONAL] = shape_optional,
    [IR_OP_OPTIONAL_GET_ELEMENT] = shape_optional_get,
    [IR_OP_OPTIONAL_HAS_ELEMENT] = shape_optional_has, [IR_OP_SEQUENCE_EMPTY] = shape_seq_empty,
    [IR_OP_SEQUENCE_CONSTRUCT] = shape_seq_construct, [IR_OP_SEQUENCE_INSERT] = shape_seq_same,
    [IR_OP_SEQUENCE_ERASE] = shape_seq_same, [IR_OP_SEQUENCE_AT] = shape_seq_at,
    [IR_OP_SEQUENCE_LENGTH] = shape_seq_length, [IR_OP_SPLIT_TO_SEQUENCE] = shape_split_to_seq,
    [IR_OP_CONCAT_FROM_SEQUENCE] = shape_concat_from_seq,
};

/* ---- type text and merging ---- */

static size_t type_str(const IrGraph *g, const IrType *t, char *buf, size_t size, int depth) {
    size_t n = 0;
#define PUT(...)                                                                          \
    do {                                                                                  \
        int k_ = snprintf(buf + n, n < size ? size - n : 0, __VA_ARGS__);                 \
        if (k_ > 0) n += (size_t)k_;                                                      \
    } while (0)
    if (depth > 4) {
        PUT("...");
        return n;
    }
    switch (t->kind) {
    case IR_TYPE_TENSOR:
    case IR_TYPE_SPARSE_TENSOR:
        PUT("%s(%s)", t->kind == IR_TYPE_TENSOR ? "tensor" : "sparse",
            t->dtype < IR_DTYPE_COUNT ? ir_dtype_name((IrDType)t->dtype) : "?");
        if (t->rank < 0) {
            PUT("[*]");
            break;
        }
        PUT("[");
        for (int i = 0; i < t->rank; i++) {
            if (i) PUT(",");
            if (t->dims[i] >= 0) PUT("%lld", (long long)t->dims[i]);
            else if (t->syms[i]) PUT("%s", g ? ir_graph_sym_name(g, t->syms[i]) : "sym");
            else PUT("?");
        }
        PUT("]");
        break;
    case IR_TYPE_SEQUENCE:
    case IR_TYPE_OPTIONAL:
        PUT("%s(", t->kind == IR_TYPE_SEQUENCE ? "seq" : "optional");
        if (t->elem) n += type_str(g, t->elem, buf + (n < size ? n : size),
                                   n < size ? size - n : 0, depth + 1);
        else PUT("?");
        PUT(")");
        break;
    case IR_TYPE_MAP: PUT("map(%s,...)", ir_dtype_name((IrDType)t->key_dtype)); break;
    default: PUT("?"); break;
    }
#undef PUT
    return n;
}

const char *ir_shape_type_str(const IrGraph *g, const IrType *t, char *buf, size_t size) {
    if (size) buf[0] = '\0';
    type_str(g, t, buf, size, 0);
    return buf;
}

bool ir_shape_merge(IrArena *a, IrType *declared, const IrType *inferred) {
    if (inferred->kind == IR_TYPE_UNDEF) return true;
    if (declared->kind == IR_TYPE_UNDEF) {
        IrLayout layout = (IrLayout)declared->layout;
        *declared = *inferred;
        if (layout != IR_LAYOUT_PLAIN) declared->layout = (uint8_t)layout;
        return true;
    }
    if (declared->kind != inferred->kind) return false;
    if (declared->kind == IR_TYPE_SEQUENCE || declared->kind == IR_TYPE_OPTIONAL) {
        if (!inferred->elem) return true;
        if (!declared->elem) {
            declared->elem = inferred->elem;
            return true;
        }
        IrType *e = ir_arena_memdup(a, declared->elem, sizeof *e);
        bool ok = ir_shape_merge(a, e, inferred->elem);
        declared->elem = e;
        return ok;
    }
    if (declared->kind == IR_TYPE_MAP) {
        if (!declared->key_dtype) declared->key_dtype = inferred->key_dtype;
        if (!declared->elem) declared->elem = inferred->elem;
        return true;
    }
    if (inferred->dtype) {
        if (declared->dtype && declared->dtype != inferred->dtype) return false;
        declared->dtype = inferred->dtype;
    }
    if (inferred->rank < 0) return true;
    if (declared->rank < 0) {
        declared->rank = inferred->rank;
        memcpy(declared->dims, inferred->dims, sizeof declared->dims);
        memcpy(declared->syms, inferred->syms, sizeof declared->syms);
        return true;
    }
    if (declared->rank != inferred->rank) return false;
    for (int i = 0; i < declared->rank; i++) {
        int64_t dv = declared->dims[i], iv = inferred->dims[i];
        if (dv >= 0 && iv >= 0 && dv != iv) return false;
        if (dv >= 0) continue;
        if (iv >= 0) {
            declared->dims[i] = iv;
            declared->syms[i] = 0;
        } else if (!declared->syms[i]) {
            declared->syms[i] = inferred->syms[i];
        }
    }
    return true;
}

/* ---- helpers for per-op functions ---- */

void shape_error(ShapeCtx *c, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ir_node_diag(c->d, DIAG_ERROR, c->node, ": %s", msg);
    c->failed = true;
}

/* The model's opset for the node; unset (hand-built graphs) means the newest. */
#define SHAPE_OPSET_NEWEST 1000
int32_t shape_opset(const ShapeCtx *c) {
    if (c->node->opset > 0) return c->node->opset;
    int64_t v = ir_graph_opset(c->g, c->node->domain);
    return v > 0 ? (int32_t)v : SHAPE_OPSET_NEWEST;
}

const IrType *shape_in(const ShapeCtx *c, uint32_t i) {
    if (i >= c->node->n_inputs || c->node->inputs[i] == IR_NONE) return NULL;
    uint32_t v = c->node->inputs[i];
    if (v >= c->g->n_values) return NULL;
    return &c->g->values[v].type;
}

bool shape_has_in(const ShapeCtx *c, uint32_t i) { return shape_in(c, i) != NULL; }

int shape_rank(const ShapeCtx *c, uint32_t i) {
    const IrType *t = shape_in(c, i);
    return t && t->kind == IR_TYPE_TENSOR ? t->rank : -1;
}

IrDType shape_dtype(const ShapeCtx *c, uint32_t i) {
    const IrType *t = shape_in(c, i);
    return t && t->kind == IR_TYPE_TENSOR ? (IrDType)t->dtype : IR_DTYPE_UNDEF;
}

const IrTensor *shape_value_const(const ShapeGraphState *st, uint32_t value) {
    while (st) {
        if (value >= st->g->n_values) return NULL;
        const IrValue *v = &st->g->values[value];
        if (v->kind == IR_VALUE_CONST) return v->tensor;
        if (v->kind == IR_VALUE_OUTER) {
            value = v->producer;
            st = st->parent;
            continue;
        }
        if ((v->kind == IR_VALUE_NODE || v->kind == IR_VALUE_INPUT) && value < st->n_known)
            return st->known[value];
        return NULL;
    }
    return NULL;
}

const IrTensor *shape_const(const ShapeCtx *c, uint32_t i) {
    if (!shape_has_in(c, i)) return NULL;
    return shape_value_const(c->st, c->node->inputs[i]);
}

bool shape_tensor_ints(const IrTensor *t, int64_t *buf, uint32_t cap, uint32_t *n) {
    if (!t || !t->data || t->n_elems < 0 || t->n_elems > (int64_t)cap) return false;
    const uint8_t *p = t->data;
    for (int64_t k = 0; k < t->n_elems; k++) {
        switch (t->dtype) {
        case IR_DTYPE_I64: {
            int64_t x;
            memcpy(&x, p + 8 * k, 8);
            buf[k] = x;
            break;
        }
        case IR_DTYPE_I32: {
            int32_t x;
            memcpy(&x, p + 4 * k, 4);
            buf[k] = x;
            break;
        }
        case IR_DTYPE_U64: {
            uint64_t x;
            memcpy(&x, p + 8 * k, 8);
            buf[k] = (int64_t)x;
            break;
        }
        case IR_DTYPE_U32: {
            uint32_t x;
            memcpy(&x, p + 4 * k, 4);
            buf[k] = x;
            break;
        }
        case IR_DTYPE_I16: {
            int16_t x;
            memcpy(&x, p + 2 * k, 2);
            buf[k] = x;
            break;
        }
        case IR_DTYPE_U16: {
            uint16_t x;
            memcpy(&x, p + 2 * k, 2);
            buf[k] = x;
            break;
        }
        case IR_DTYPE_I8: buf[k] = (int8_t)p[k]; break;
        case IR_DTYPE_U8:
        case IR_DTYPE_BOOL: buf[k] = p[k]; break;
        default: return false;
        }
    }
    *n = (uint32_t)t->n_elems;
    return true;
}

bool shape_tensor_floats(const IrTensor *t, double *buf, uint32_t cap, uint32_t *n) {
    if (!t || !t->data || t->n_elems < 0 || t->n_elems > (int64_t)cap) return false;
    const uint8_t *p = t->data;
    if (t->dtype == IR_DTYPE_F32) {
        for (int64_t k = 0; k < t->n_elems; k++) {
            float x;
            memcpy(&x, p + 4 * k, 4);
            buf[k] = x;
        }
    } else if (t->dtype == IR_DTYPE_F64) {
        for (int64_t k = 0; k < t->n_elems; k++) memcpy(&buf[k], p + 8 * k, 8);
    } else {
        int64_t tmp[SHAPE_MAX_KNOWN_ELEMS];
        if (t->n_elems > SHAPE_MAX_KNOWN_ELEMS || !shape_tensor_ints(t, tmp, cap, n))
            return false;
        for (int64_t k = 0; k < t->n_elems; k++) buf[k] = (double)tmp[k];
    }
    *n = (uint32_t)t->n_elems;
    return true;
}

bool shape_const_ints(const ShapeCtx *c, uint32_t i, int64_t *buf, uint32_t cap,
                      uint32_t *n) {
    return shape_tensor_ints(shape_const(c, i), buf, cap, n);
}

bool shape_const_floats(const ShapeCtx *c, uint32_t i, double *buf, uint32_t cap,
                        uint32_t *n) {
    return shape_tensor_floats(shape_const(c, i), buf, cap, n);
}

IrType shape_unknown(void) {
    IrType t;
    memset(&t, 0, sizeof t);
    t.rank = -1;
    for (int i = 0; i < IR_MAX_RANK; i++) t.dims[i] = IR_DIM_UNKNOWN;
    return t;
}

/* Every dim slot unknown, also those beyond rank, so that growing the rank later is safe. */
IrType shape_tensor(IrDType dtype, int rank) {
    IrType t = shape_unknown();
    t.kind = IR_TYPE_TENSOR;
    t.dtype = (uint8_t)dtype;
    t.rank = (int8_t)rank;
    return t;
}

ShapeDim shape_dim(const IrType *t, int i) {
    ShapeDim d = {IR_DIM_UNKNOWN, 0};
    if (t->rank < 0 || i < 0 || i >= t->rank) return d;
    d.v = t->dims[i] >= 0 ? t->dims[i] : IR_DIM_UNKNOWN;
    d.sym = d.v >= 0 ? 0 : t->syms[i];
    return d;
}

void shape_set_dim(IrType *t, int i, ShapeDim d) {
    /* A per-op function that meets input ranks a malformed model gives it may ask for a dim
     * past the rank: ignore it rather than crash on untrusted input (the result merges with
     * the declared type, and the backend still needs every shape static). */
    if (i < 0 || i >= t->rank || i >= IR_MAX_RANK) return;
    t->dims[i] = d.v >= 0 ? d.v : IR_DIM_UNKNOWN;
    t->syms[i] = d.v >= 0 ? 0 : d.sym;
}

ShapeDim shape_dim_static(int64_t v) {
    ShapeDim d = {v >= 0 ? v : IR_DIM_UNKNOWN, 0};
    return d;
}

ShapeDim shape_dim_unknown(void) { return shape_dim_static(IR_DIM_UNKNOWN); }

bool shape_dim_same(ShapeDim a, ShapeDim b) {
    if (a.v >= 0 || b.v >= 0) return a.v == b.v;
    return a.sym && a.sym == b.sym;
}

bool shape_axis(ShapeCtx *c, int64_t axis, int rank, int *out) {
    if (rank < 0) return false;
    if (axis < -(int64_t)rank || axis >= rank) {
        shape_error(c, "axis %lld out of range for rank %d", (long long)axis, rank);
        return false;
    }
    *out = (int)(axis < 0 ? axis + rank : axis);
    return true;
}

bool shape_broadcast(ShapeCtx *c, const IrType *a, const IrType *b, IrType *out) {
    if (a->kind != IR_TYPE_TENSOR || b->kind != IR_TYPE_TENSOR || a->rank < 0 || b->rank < 0) {
        out->rank = -1;
        return true;
    }
    int r = a->rank > b->rank ? a->rank : b->rank;
    IrType res = *out;
    res.rank = (int8_t)r;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        ShapeDim da = ia >= 0 ? shape_dim(a, ia) : shape_dim_static(1);
        ShapeDim db = ib >= 0 ? shape_dim(b, ib) : shape_dim_static(1);
        ShapeDim o;
        if (da.v == 1) o = db;
        else if (db.v == 1) o = da;
        else if (da.v >= 0 && db.v >= 0) {
            if (da.v != db.v) {
                shape_error(c, "cannot broadcast dimension %lld against %lld",
                            (long long)da.v, (long long)db.v);
                return false;
            }
            o = da;
        } else if (da.v >= 0) o = da;
        else if (db.v >= 0) o = db;
        else if (shape_dim_same(da, db)) o = da;
        else o = shape_dim_unknown();
        shape_set_dim(&res, i, o);
    }
    *out = res;
    return true;
}

void shape_set_known(ShapeCtx *c, uint32_t i, IrTensor *t) {
    if (i < c->n_out) c->out_known[i] = t;
}

IrTensor *shape_new_i64(ShapeCtx *c, int rank, const int64_t *dims, const int64_t *vals) {
    IrTensor *t = ir_tensor_new(c->g->arena, IR_DTYPE_I64, rank, dims);
    if (t->n_elems) memcpy(t->data, vals, (size_t)t->n_elems * sizeof(int64_t));
    return t;
}

/* ---- the walk ---- */

static bool infer_graph(IrGraph *g, ShapeGraphState *parent, Diag *d, bool fold);

static void conflict(Diag *d, const IrGraph *g, const IrNode *n, const char *what,
                     const IrValue *v, const IrType *declared, const IrType *inferred) {
    char a[256], b[256];
    diag_error(d, "node '%s' (%s, opset %d): %s '%s': inferred %s conflicts with declared %s",
               n ? n->name : "", n ? n->op_type : "graph", n ? (int)n->opset : 0, what,
               v->name, ir_shape_type_str(g, inferred, a, sizeof a),
               ir_shape_type_str(g, declared, b, sizeof b));
}

IrGraph *shape_infer_subgraph(ShapeCtx *c, uint32_t sub, const IrType *in_types,
                              uint32_t n_in) {
    if (sub >= c->g->n_subgraphs) {
        shape_error(c, "subgraph index %u out of range", sub);
        return NULL;
    }
    IrGraph *s = c->g->subgraphs[sub];
    for (uint32_t i = 0; i < n_in && i < s->n_inputs; i++) {
        IrValue *v = &s->values[s->inputs[i]];
        IrType declared = v->type;
        if (!ir_shape_merge(c->g->arena, &v->type, &in_types[i])) {
            conflict(c->d, c->g, c->node, "subgraph input", v, &declared, &in_types[i]);
            c->failed = true;
            v->type = declared;
        }
    }
    if (!infer_graph(s, c->st, c->d, false)) c->failed = true;
    return s;
}

/* Whether the static dims of t multiply to more than SHAPE_MAX_ELEMS (symbolic and unknown
 * dims count as 1: a later --dim is checked when inference runs again). */
static bool too_many_elems(const IrType *t) {
    if (t->kind != IR_TYPE_TENSOR || t->rank < 0) return false;
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] == 0) return false;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0) continue;
        if (t->dims[i] > SHAPE_MAX_ELEMS / n) return true;
        n *= t->dims[i];
    }
    return false;
}

static void infer_node(ShapeGraphState *st, uint32_t id, Diag *d, bool *ok) {
    IrGraph *g = st->g;
    const IrNode *n = &g->nodes[id];
    ShapeFn fn = n->op < IR_OP_COUNT ? shape_table[n->op] : NULL;
    if (!fn && n->op < IR_OP_COUNT && ir_op_has((IrOp)n->op, OPF_ELTWISE))
        fn = ir_op_has((IrOp)n->op, OPF_BCAST) ? shape_bcast : shape_same;
    if (!fn || n->n_outputs == 0) return;
    IrType *out = malloc(n->n_outputs * sizeof *out);
    IrTensor **known = calloc(n->n_outputs, sizeof *known);
    IR_ASSERT(out && known);
    for (uint32_t k = 0; k < n->n_outputs; k++) out[k] = shape_unknown();
    ShapeCtx c = {g, d, st, id, n, out, known, n->n_outputs, false};
    fn(&c);
    if (!c.failed && ir_op_has((IrOp)n->op, OPF_ELTWISE)) shape_eval_eltwise(&c);
    for (uint32_t k = 0; k < n->n_outputs && !c.failed; k++)
        if (too_many_elems(&out[k])) {
            char t[256];
            uint32_t v = n->outputs[k];
            shape_error(&c, "output '%s' would be %s: more than %lld elements",
                        v < g->n_values && g->values[v].name ? g->values[v].name : "",
                        ir_shape_type_str(g, &out[k], t, sizeof t), (long long)SHAPE_MAX_ELEMS);
        }
    if (c.failed) *ok = false;
    for (uint32_t k = 0; k < n->n_outputs; k++) {
        uint32_t v = n->outputs[k];
        if (v == IR_NONE || v >= g->n_values) continue;
        IrValue *val = &g->values[v];
        IrType declared = val->type;
        if (!ir_shape_merge(g->arena, &val->type, &out[k])) {
            char what[32];
            snprintf(what, sizeof what, "output %u", k);
            conflict(d, g, n, what, val, &declared, &out[k]);
            val->type = declared;
            *ok = false;
        }
        if (known[k] && v < st->n_known) st->known[v] = known[k];
    }
    free(out);
    free(known);
}

static IrType tensor_type_of(const IrTensor *t) {
    return ir_type_tensor((IrDType)t->dtype, t->rank, t->dims);
}

/* Nodes whose every output was computed by partial evaluation become constants: the
 * Shape -> Gather -> Concat -> Reshape chains of exporters vanish at compile time. */
static void fold_known(ShapeGraphState *st) {
    IrGraph *g = st->g;
    bool changed = false;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        IrNode *n = &g->nodes[i];
        bool all = !n->dead && n->n_outputs > 0 && !ir_op_has((IrOp)n->op, OPF_SUBGRAPH) &&
                   !ir_op_has((IrOp)n->op, OPF_RANDOM);
        for (uint32_t k = 0; k < n->n_outputs && all; k++)
            all = n->outputs[k] != IR_NONE && n->outputs[k] < st->n_known &&
                  st->known[n->outputs[k]] != NULL;
        if (!all) continue;
        for (uint32_t k = 0; k < n->n_outputs; k++) {
            IrValue *v = &g->values[n->outputs[k]];
            v->kind = IR_VALUE_CONST;
            v->producer = IR_NONE;
            v->tensor = st->known[n->outputs[k]];
        }
        n->dead = true;
        changed = true;
    }
    if (changed) ir_graph_compact(g);
}

/* One sound backward step: an elementwise op without broadcasting (Log, Sqrt, Cast, Clip...)
 * has the shape of its first input, so a static output fixes an input whose dims forward
 * inference left unknown (e.g. a ReduceSum over axes read from data, followed by a Log whose
 * output the model declares). Last node first, so chains of such ops resolve in one sweep. */
static void infer_backward(IrGraph *g) {
    for (uint32_t i = g->n_nodes; i-- > 0;) {
        const IrNode *n = &g->nodes[i];
        if (n->dead || n->n_inputs < 1 || n->n_outputs != 1 || n->inputs[0] == IR_NONE ||
            n->outputs[0] == IR_NONE || !ir_op_has((IrOp)n->op, OPF_ELTWISE) ||
            ir_op_has((IrOp)n->op, OPF_BCAST))
            continue;
        const IrType *y = &g->values[n->outputs[0]].type;
        IrValue *x = &g->values[n->inputs[0]];
        if (!ir_type_is_static(y) || ir_type_is_static(&x->type) || x->type.kind != IR_TYPE_TENSOR ||
            (x->type.rank >= 0 && x->type.rank != y->rank))
            continue;
        IrType t = x->type;
        t.rank = y->rank;
        for (int k = 0; k < y->rank; k++) {
            t.dims[k] = y->dims[k];
            t.syms[k] = 0;
        }
        IrType declared = x->type;
        if (!ir_shape_merge(g->arena, &x->type, &t)) x->type = declared;
    }
}

static bool infer_graph(IrGraph *g, ShapeGraphState *parent, Diag *d, bool fold) {
    bool ok = true;
    ShapeGraphState st = {g, calloc(g->n_values ? g->n_values : 1, sizeof(IrTensor *)),
                          g->n_values, parent, parent ? parent->fold : fold};
    IR_ASSERT(st.known);
    for (uint32_t v = 0; v < g->n_values; v++) {
        IrValue *val = &g->values[v];
        IrType declared = val->type;
        if (val->kind == IR_VALUE_CONST && val->tensor) {
            IrType t = tensor_type_of(val->tensor);
            if (!ir_shape_merge(g->arena, &val->type, &t)) {
                conflict(d, g, NULL, "initializer", val, &declared, &t);
                val->type = declared;
                ok = false;
            }
        } else if (val->kind == IR_VALUE_INPUT && val->type.kind == IR_TYPE_TENSOR &&
                   ir_type_numel(&val->type) == 0 && val->type.dtype != IR_DTYPE_UNDEF &&
                   val->type.dtype != IR_DTYPE_STRING) {
            /* an input with no elements has no data to wait for: its value is known (the
             * empty axes of Reduce* function bodies) */
            st.known[v] = ir_tensor_new(g->arena, (IrDType)val->type.dtype, val->type.rank,
                                        val->type.dims);
        } else if (val->kind == IR_VALUE_OUTER && parent && val->producer < parent->g->n_values) {
            const IrType *pt = &parent->g->values[val->producer].type;
            if (!ir_shape_merge(g->arena, &val->type, pt)) {
                conflict(d, g, NULL, "outer value", val, &declared, pt);
                val->type = declared;
                ok = false;
            }
        }
    }
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].dead) continue;
        infer_node(&st, i, d, &ok);
    }
    if (ok) infer_backward(g);
    if (st.fold && ok) fold_known(&st);
    free(st.known);
    return ok;
}

bool ir_infer_shapes(IrGraph *g, Diag *d) { return infer_graph(g, NULL, d, false); }

bool ir_infer_shapes_fold(IrGraph *g, Diag *d) { return infer_graph(g, NULL, d, true); }
