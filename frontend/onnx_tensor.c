/* TensorProto, SparseTensorProto and TypeProto to IR form. Tensor data from raw_data, the
 * typed fields or external files becomes packed little-endian bytes as ONNX raw_data would
 * hold them (sub-byte types packed from the low bits up); sparse tensors are densified.
 * Every count, dim and size from the file is checked before it is used. */
#include <string.h>

#include "frontend/onnx_internal.h"

/* Which typed field of TensorProto carries a data type, and how many entries per element. */
typedef enum TypedField {
    FIELD_NONE,
    FIELD_FLOAT,  /* float_data */
    FIELD_INT32,  /* int32_data */
    FIELD_INT64,  /* int64_data */
    FIELD_DOUBLE, /* double_data */
    FIELD_UINT64, /* uint64_data */
    FIELD_STRING, /* string_data */
} TypedField;

static TypedField typed_field(IrDType t) {
    switch (t) {
    case IR_DTYPE_F32:
    case IR_DTYPE_C64:
        return FIELD_FLOAT;
    case IR_DTYPE_I64:
        return FIELD_INT64;
    case IR_DTYPE_F64:
    case IR_DTYPE_C128:
        return FIELD_DOUBLE;
    case IR_DTYPE_U32:
    case IR_DTYPE_U64:
        return FIELD_UINT64;
    case IR_DTYPE_STRING:
        return FIELD_STRING;
    case IR_DTYPE_UNDEF:
    case IR_DTYPE_COUNT:
        return FIELD_NONE;
    default:
        return FIELD_INT32; /* every type of 16 bits or fewer, and int32 */
    }
}

static bool dtype_valid(int32_t t) { return t > IR_DTYPE_UNDEF && t < IR_DTYPE_COUNT; }

/* Element count of dims, bounded by ONNX_MAX_ELEMS; false (with a diagnostic) otherwise. */
static bool count_elems(OnnxCtx *c, const int64_t *dims, size_t n_dims, int64_t *out,
                        const char *what) {
    if (n_dims > IR_MAX_RANK) {
        diag_error(c->d, "%s: rank %zu exceeds the limit of %d", what, n_dims, IR_MAX_RANK);
        return false;
    }
    int64_t n = 1;
    for (size_t i = 0; i < n_dims; i++) {
        if (dims[i] < 0) {
            diag_error(c->d, "%s: dimension %zu is negative (%lld)", what, i, (long long)dims[i]);
            return false;
        }
        if (dims[i] != 0 && n > ONNX_MAX_ELEMS / dims[i]) {
            diag_error(c->d, "%s: more than %lld elements", what, (long long)ONNX_MAX_ELEMS);
            return false;
        }
        n *= dims[i];
    }
    *out = n;
    return true;
}

static void put_le(uint8_t *p, uint64_t v, unsigned n_bytes) {
    for (unsigned i = 0; i < n_bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static bool count_mismatch(OnnxCtx *c, const char *what, const char *field, size_t have,
                           uint64_t want) {
    if (have == want) return false;
    diag_error(c->d, "%s: field %s has %zu values, expected %llu", what, field, have,
               (unsigned long long)want);
    return true;
}

/* Fills t->data from the typed field of tp. */
static bool fill_typed(OnnxCtx *c, const Onnx__TensorProto *tp, IrTensor *t, const char *what) {
    IrDType dt = (IrDType)t->dtype;
    uint64_t n = (uint64_t)t->n_elems;
    uint8_t *out = t->data;
    switch (typed_field(dt)) {
    case FIELD_FLOAT: {
        uint64_t want = dt == IR_DTYPE_C64 ? 2 * n : n;
        if (count_mismatch(c, what, "float_data", tp->n_float_data, want)) return false;
        for (uint64_t i = 0; i < want; i++) {
            uint32_t bits;
            memcpy(&bits, &tp->float_data[i], 4);
            put_le(out + 4 * i, bits, 4);
        }
        return true;
    }
    case FIELD_DOUBLE: {
        uint64_t want = dt == IR_DTYPE_C128 ? 2 * n : n;
        if (count_mismatch(c, what, "double_data", tp->n_double_data, want)) return false;
        for (uint64_t i = 0; i < want; i++) {
            uint64_t bits;
            memcpy(&bits, &tp->double_data[i], 8);
            put_le(out + 8 * i, bits, 8);
        }
        return true;
    }
    case FIELD_INT64:
        if (count_mismatch(c, what, "int64_data", tp->n_int64_data, n)) return false;
        for (uint64_t i = 0; i < n; i++)
            put_le(out + 8 * i, (uint64_t)tp->int64_data[i], 8);
        return true;
    case FIELD_UINT64: {
        if (count_mismatch(c, what, "uint64_data", tp->n_uint64_data, n)) return false;
        unsigned size = dt == IR_DTYPE_U32 ? 4 : 8;
        for (uint64_t i = 0; i < n; i++)
            put_le(out + size * i, tp->uint64_data[i], size);
        return true;
    }
    case FIELD_INT32: {
        uint32_t bits = ir_dtype_bits(dt);
        if (bits < 8) {
            /* sub-byte types: each int32 holds one byte of packed elements */
            if (count_mismatch(c, what, "int32_data", tp->n_int32_data, t->size_bytes))
                return false;
            for (size_t i = 0; i < t->size_bytes; i++)
                out[i] = (uint8_t)tp->int32_data[i];
            return true;
        }
        if (count_mismatch(c, what, "int32_data", tp->n_int32_data, n)) return false;
        for (uint64_t i = 0; i < n; i++)
            put_le(out + (bits / 8) * i, (uint32_t)tp->int32_data[i], bits / 8);
        return true;
    }
    case FIELD_STRING:
        if (count_mismatch(c, what, "string_data", tp->n_string_data, n)) return false;
        for (uint64_t i = 0; i < n; i++) {
            const ProtobufCBinaryData *s = &tp->string_data[i];
            t->strings[i].data = ir_arena_strndup(c->root->arena, (const char *)s->data, s->len);
            t->strings[i].len = s->len;
        }
        return true;
    case FIELD_NONE:
        break;
    }
    diag_error(c->d, "%s: data type %d has no typed field", what, (int)dt);
    return false;
}

/* True when tp has any typed-field data (used to refuse raw_data plus typed data). */
static bool has_typed_data(const Onnx__TensorProto *tp) {
    return tp->n_float_data || tp->n_int32_data || tp->n_int64_data || tp->n_double_data ||
           tp->n_uint64_data || tp->n_string_data;
}

IrTensor *onnx_tensor_convert(OnnxCtx *c, const Onnx__TensorProto *tp, const char *what) {
    if (!tp) {
        diag_error(c->d, "%s: missing tensor", what);
        return NULL;
    }
    if (!tp->has_data_type || !dtype_valid(tp->data_type)) {
        diag_error(c->d, "%s: unknown data_type %d", what, tp->has_data_type ? tp->data_type : 0);
        return NULL;
    }
    if (tp->segment) {
        diag_error(c->d, "%s: segmented tensors are not supported", what);
        return NULL;
    }
    int64_t n;
    if (!count_elems(c, tp->dims, tp->n_dims, &n, what)) return NULL;
    IrDType dt = (IrDType)tp->data_type;
    size_t size_bytes = ir_dtype_size_bytes(dt, n);
    bool external =
        tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    if (tp->has_data_location && !external &&
        tp->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT) {
        diag_error(c->d, "%s: unknown data_location %d", what, (int)tp->data_location);
        return NULL;
    }
    if (dt == IR_DTYPE_STRING && (external || tp->has_raw_data)) {
        diag_error(c->d, "%s: string tensors must use string_data", what);
        return NULL;
    }
    if ((external || tp->has_raw_data) && has_typed_data(tp)) {
        diag_error(c->d, "%s: has both raw or external data and typed fields", what);
        return NULL;
    }
    if (external && tp->has_raw_data) {
        diag_error(c->d, "%s: has both raw_data and external data", what);
        return NULL;
    }
    if (tp->has_raw_data && tp->raw_data.len != size_bytes) {
        diag_error(c->d, "%s: raw_data has %zu bytes, expected %zu for %lld elements of %s", what,
                   tp->raw_data.len, size_bytes, (long long)n, ir_dtype_name(dt));
        return NULL;
    }
    /* Allocations below are bounded by bytes actually present (raw, typed counts checked
     * before the copy, external length checked against the file), so allocate only after
     * the checks that tie them to the input. */
    if (!external && !tp->has_raw_data && dt != IR_DTYPE_STRING) {
        /* typed: check the count before allocating */
        TypedField f = typed_field(dt);
        size_t have = f == FIELD_FLOAT    ? tp->n_float_data
                      : f == FIELD_DOUBLE ? tp->n_double_data
                      : f == FIELD_INT64  ? tp->n_int64_data
                      : f == FIELD_UINT64 ? tp->n_uint64_data
                                          : tp->n_int32_data;
        uint64_t want = (dt == IR_DTYPE_C64 || dt == IR_DTYPE_C128) ? 2 * (uint64_t)n
                        : ir_dtype_bits(dt) < 8                     ? size_bytes
                                                                    : (uint64_t)n;
        const char *fname = f == FIELD_FLOAT    ? "float_data"
                            : f == FIELD_DOUBLE ? "double_data"
                            : f == FIELD_INT64  ? "int64_data"
                            : f == FIELD_UINT64 ? "uint64_data"
                                                : "int32_data";
        if (count_mismatch(c, what, fname, have, want)) return NULL;
    } else if (dt == IR_DTYPE_STRING &&
               count_mismatch(c, what, "string_data", tp->n_string_data, (uint64_t)n)) {
        return NULL;
    }
    void *ext = NULL;
    if (external) {
        ext = onnx_extdata_read(c, tp, size_bytes, what);
        if (!ext) return NULL;
    }
    IrTensor *t;
    if (ext) {
        /* the header only: the bytes were read into the arena already */
        t = ir_arena_alloc(c->root->arena, sizeof *t);
        t->dtype = (uint8_t)dt;
        t->rank = (int8_t)tp->n_dims;
        for (size_t i = 0; i < tp->n_dims; i++)
            t->dims[i] = tp->dims[i];
        t->n_elems = n;
        t->size_bytes = size_bytes;
        t->data = ext;
    } else {
        t = ir_tensor_new(c->root->arena, dt, (int)tp->n_dims, tp->dims);
    }
    t->name = ir_arena_strdup(c->root->arena, tp->name ? tp->name : "");
    if (!ext && tp->has_raw_data) {
        if (size_bytes) memcpy(t->data, tp->raw_data.data, size_bytes);
    } else if (!ext && !fill_typed(c, tp, t, what)) {
        return NULL;
    }
    return t;
}

/* ---- sparse tensors ---- */

/* Copies element src_i of src into element dst_i of dst (same dtype). */
static void copy_elem(IrTensor *dst, int64_t dst_i, const IrTensor *src, int64_t src_i) {
    IrDType dt = (IrDType)dst->dtype;
    if (dt == IR_DTYPE_STRING) {
        dst->strings[dst_i] = src->strings[src_i];
        return;
    }
    uint32_t bits = ir_dtype_bits(dt);
    if (bits >= 8) {
        size_t b = bits / 8;
        memcpy((uint8_t *)dst->data + (size_t)dst_i * b,
               (const uint8_t *)src->data + (size_t)src_i * b, b);
        return;
    }
    uint64_t sbit = (uint64_t)src_i * bits, dbit = (uint64_t)dst_i * bits;
    uint8_t mask = (uint8_t)((1u << bits) - 1);
    uint8_t v = (uint8_t)(((const uint8_t *)src->data)[sbit / 8] >> (sbit % 8)) & mask;
    uint8_t *p = (uint8_t *)dst->data + dbit / 8;
    *p = (uint8_t)((*p & ~(mask << (dbit % 8))) | (v << (dbit % 8)));
}

IrTensor *onnx_sparse_convert(OnnxCtx *c, const Onnx__SparseTensorProto *sp, const char *what) {
    if (!sp || !sp->values) {
        diag_error(c->d, "%s: sparse tensor without values", what);
        return NULL;
    }
    int64_t n;
    if (!count_elems(c, sp->dims, sp->n_dims, &n, what)) return NULL;
    IrTensor *vals = onnx_tensor_convert(c, sp->values, what);
    if (!vals) return NULL;
    IrDType dt = (IrDType)vals->dtype;
    if (dt == IR_DTYPE_STRING ? (uint64_t)n * sizeof(IrStr) > ONNX_MAX_SPARSE_DENSE_BYTES
                              : ir_dtype_size_bytes(dt, n) > ONNX_MAX_SPARSE_DENSE_BYTES) {
        diag_error(c->d, "%s: dense form would exceed %lld bytes", what,
                   (long long)ONNX_MAX_SPARSE_DENSE_BYTES);
        return NULL;
    }
    int64_t nnz = vals->n_elems;
    if (vals->rank != 1) {
        diag_error(c->d, "%s: sparse values must be 1-D", what);
        return NULL;
    }
    IrTensor *idx = NULL;
    if (nnz > 0 || sp->indices) {
        idx = onnx_tensor_convert(c, sp->indices, what);
        if (!idx) return NULL;
        if (idx->dtype != IR_DTYPE_I64) {
            diag_error(c->d, "%s: sparse indices must be int64", what);
            return NULL;
        }
    }
    int rank = (int)sp->n_dims;
    bool coords = idx && idx->rank == 2;
    if (idx && !((idx->rank == 1 && idx->dims[0] == nnz) ||
                 (coords && idx->dims[0] == nnz && idx->dims[1] == rank))) {
        diag_error(c->d, "%s: sparse indices shape does not match %lld values of rank %d", what,
                   (long long)nnz, rank);
        return NULL;
    }
    /* the dense form may be larger than what the file stores, but not without bound: a
     * few bytes of indices must not ask for gigabytes */
    int64_t dense = dt == IR_DTYPE_STRING ? n * (int64_t)sizeof(IrStr)
                                          : (int64_t)ir_dtype_size_bytes(dt, n);
    int64_t stored = (int64_t)vals->size_bytes + (idx ? (int64_t)idx->size_bytes : 0);
    if (dense > ONNX_SPARSE_DENSE_FREE_BYTES && dense / ONNX_MAX_SPARSE_EXPANSION > stored) {
        diag_error(c->d, "%s: dense form of %lld bytes from %lld stored, more than %d times",
                   what, (long long)dense, (long long)stored, ONNX_MAX_SPARSE_EXPANSION);
        return NULL;
    }
    IrTensor *t = ir_tensor_new(c->root->arena, dt, rank, sp->dims);
    t->name = vals->name;
    if (dt == IR_DTYPE_STRING)
        for (int64_t i = 0; i < n; i++)
            t->strings[i].data = "";
    const int64_t *ix = idx ? idx->data : NULL;
    for (int64_t k = 0; k < nnz; k++) {
        int64_t lin = 0;
        if (coords) {
            for (int j = 0; j < rank; j++) {
                int64_t v = ix[k * rank + j];
                if (v < 0 || v >= sp->dims[j]) {
                    lin = -1;
                    break;
                }
                lin = lin * sp->dims[j] + v;
            }
        } else {
            lin = ix[k];
        }
        if (lin < 0 || lin >= n) {
            diag_error(c->d, "%s: sparse index %lld out of range", what, (long long)k);
            return NULL;
        }
        copy_elem(t, lin, vals, k);
    }
    return t;
}

/* ---- types ---- */

static bool shape_convert(OnnxCtx *c, const Onnx__TensorShapeProto *sh, IrType *t,
                          const char *what) {
    if (!sh) {
        t->rank = -1;
        return true;
    }
    if (sh->n_dim > IR_MAX_RANK) {
        diag_error(c->d, "%s: rank %zu exceeds the limit of %d", what, sh->n_dim, IR_MAX_RANK);
        return false;
    }
    t->rank = (int8_t)sh->n_dim;
    int64_t known = 1; /* product of the known dims, bounded like a tensor's count */
    for (size_t i = 0; i < sh->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *dim = sh->dim[i];
        t->dims[i] = IR_DIM_UNKNOWN;
        t->syms[i] = 0;
        if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            /* a negative value (-1) is how exporters write "unknown": an open dim */
            if (dim->dim_value >= 0) t->dims[i] = dim->dim_value;
        } else if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   dim->dim_param && dim->dim_param[0]) {
            int64_t value;
            if (onnx_dims_bound(c, dim->dim_param, &value)) t->dims[i] = value;
            else t->syms[i] = ir_graph_sym(c->root, dim->dim_param);
        }
        int64_t v = t->dims[i];
        if (v > 0 && known > ONNX_MAX_ELEMS / v) {
            diag_error(c->d, "%s: shape has more than %lld elements", what,
                       (long long)ONNX_MAX_ELEMS);
            return false;
        }
        if (v >= 0) known *= v;
    }
    return true;
}

static bool elem_dtype(OnnxCtx *c, bool has, int32_t v, uint8_t *out, const char *what) {
    if (!has || v == 0) {
        *out = IR_DTYPE_UNDEF;
        return true;
    }
    if (!dtype_valid(v)) {
        diag_error(c->d, "%s: unknown element type %d", what, v);
        return false;
    }
    *out = (uint8_t)v;
    return true;
}

static bool elem_convert(OnnxCtx *c, const Onnx__TypeProto *tp, IrType *t, const char *what) {
    IrType *e = ir_arena_alloc(c->root->arena, sizeof *e);
    if (!onnx_type_convert(c, tp, e, what)) return false;
    t->elem = e;
    return true;
}

bool onnx_type_convert(OnnxCtx *c, const Onnx__TypeProto *tp, IrType *out, const char *what) {
    memset(out, 0, sizeof *out);
    out->rank = -1;
    if (!tp) return true;
    switch (tp->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
        out->kind = IR_TYPE_TENSOR;
        if (!elem_dtype(c, tp->tensor_type->has_elem_type, tp->tensor_type->elem_type, &out->dtype,
                        what))
            return false;
        return shape_convert(c, tp->tensor_type->shape, out, what);
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
        out->kind = IR_TYPE_SPARSE_TENSOR;
        if (!elem_dtype(c, tp->sparse_tensor_type->has_elem_type, tp->sparse_tensor_type->elem_type,
                        &out->dtype, what))
            return false;
        return shape_convert(c, tp->sparse_tensor_type->shape, out, what);
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
        out->kind = IR_TYPE_SEQUENCE;
        return elem_convert(c, tp->sequence_type->elem_type, out, what);
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
        out->kind = IR_TYPE_OPTIONAL;
        return elem_convert(c, tp->optional_type->elem_type, out, what);
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
        out->kind = IR_TYPE_MAP;
        if (!elem_dtype(c, tp->map_type->has_key_type, tp->map_type->key_type, &out->key_dtype,
                        what))
            return false;
        return elem_convert(c, tp->map_type->value_type, out, what);
    default:
        return true; /* no type given */
    }
}
