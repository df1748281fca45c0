/* The Kiln IR: an SSA graph of typed values and nodes, referred to by 32-bit ids.
 * Every later stage (passes, backends, the reference evaluator) works on this form; the
 * frontend is the only producer from ONNX. A graph owns one arena; ir_graph_free is the
 * only free. See DESIGN.md, section IR. */
#ifndef KILN_IR_H
#define KILN_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "diag.h"

#define IR_NONE UINT32_MAX      /* absent value or node id (an omitted optional input) */
#define IR_MAX_RANK 8           /* ranks above this are refused by the frontend */
#define IR_ARITY_VARIADIC 255   /* in_max/out_max of variadic ops in ops.def */
#define IR_DIM_UNKNOWN (-1)     /* a dimension with neither value nor symbol */

#define IR_ASSERT(cond)                                                                   \
    do {                                                                                  \
        if (!(cond)) ir_assert_fail(__FILE__, __LINE__, #cond);                           \
    } while (0)
void ir_assert_fail(const char *file, int line, const char *cond);

/* ---- arena ------------------------------------------------------------------------ */

typedef struct IrArenaBlock IrArenaBlock;
typedef struct IrArena {
    IrArenaBlock *head;
    size_t used_bytes; /* total handed out, for statistics */
} IrArena;

void *ir_arena_alloc(IrArena *a, size_t size_bytes);   /* zeroed, 16-byte aligned */
char *ir_arena_strdup(IrArena *a, const char *s);
char *ir_arena_strndup(IrArena *a, const char *s, size_t len);
void *ir_arena_memdup(IrArena *a, const void *p, size_t size_bytes);
void ir_arena_free(IrArena *a);

/* ---- element types (numbered as ONNX TensorProto.DataType) ------------------------- */

typedef enum IrDType {
    IR_DTYPE_UNDEF = 0,
    IR_DTYPE_F32 = 1,
    IR_DTYPE_U8 = 2,
    IR_DTYPE_I8 = 3,
    IR_DTYPE_U16 = 4,
    IR_DTYPE_I16 = 5,
    IR_DTYPE_I32 = 6,
    IR_DTYPE_I64 = 7,
    IR_DTYPE_STRING = 8,
    IR_DTYPE_BOOL = 9,
    IR_DTYPE_F16 = 10,
    IR_DTYPE_F64 = 11,
    IR_DTYPE_U32 = 12,
    IR_DTYPE_U64 = 13,
    IR_DTYPE_C64 = 14,
    IR_DTYPE_C128 = 15,
    IR_DTYPE_BF16 = 16,
    IR_DTYPE_F8E4M3FN = 17,
    IR_DTYPE_F8E4M3FNUZ = 18,
    IR_DTYPE_F8E5M2 = 19,
    IR_DTYPE_F8E5M2FNUZ = 20,
    IR_DTYPE_U4 = 21,
    IR_DTYPE_I4 = 22,
    IR_DTYPE_F4E2M1 = 23,
    IR_DTYPE_F8E8M0 = 24,
    IR_DTYPE_U2 = 25,
    IR_DTYPE_I2 = 26,
    IR_DTYPE_COUNT
} IrDType;

const char *ir_dtype_name(IrDType t);          /* "f32", "i64", "bf16", ... */
bool ir_dtype_from_name(const char *name, IrDType *out);
uint32_t ir_dtype_bits(IrDType t);              /* storage bits per element; 0 for string */
/* Bytes of a packed tensor of n elements (sub-byte types round up); 0 for strings. */
size_t ir_dtype_size_bytes(IrDType t, int64_t n_elems);

/* ---- types ------------------------------------------------------------------------- */

typedef enum IrTypeKind {
    IR_TYPE_UNDEF = 0,
    IR_TYPE_TENSOR,
    IR_TYPE_SEQUENCE,
    IR_TYPE_OPTIONAL,
    IR_TYPE_MAP,
    IR_TYPE_SPARSE_TENSOR,
} IrTypeKind;

typedef enum IrLayout {
    IR_LAYOUT_PLAIN = 0, /* row-major in ONNX dimension order */
    IR_LAYOUT_NCHW,
    IR_LAYOUT_NHWC,
} IrLayout;

/* A value's type. For tensors: dtype, rank (-1: unknown), dims (IR_DIM_UNKNOWN: unknown)
 * and symbols (0: none, k: the root graph's symbol k-1). For sequence and optional: elem
 * is the element type; for map: key_dtype and elem (the value type). */
typedef struct IrType {
    uint8_t kind;     /* IrTypeKind */
    uint8_t dtype;    /* IrDType */
    int8_t rank;
    uint8_t layout;   /* IrLayout */
    uint8_t key_dtype;
    int64_t dims[IR_MAX_RANK];
    uint32_t syms[IR_MAX_RANK];
    const struct IrType *elem;
} IrType;

/* Quantization parameters of a value: per tensor (axis -1, n 1) or per channel. */
typedef struct IrQuant {
    int32_t axis;
    uint32_t n;
    float *scales;
    int32_t *zero_points;
    bool rounds; /* the model itself rounds the value here (a QuantizeLinear/DequantizeLinear
                    pair that passes/fold_qdq.c folded): float readers read it rounded too */
} IrQuant;

/* ---- tensors (constants, initializers, tensor attributes) ------------------------- */

typedef struct IrStr {
    const char *data; /* bytes; NUL-terminated for convenience, may contain NULs */
    size_t len;
} IrStr;

typedef struct IrTensor {
    const char *name;
    uint8_t dtype;
    int8_t rank;
    int64_t dims[IR_MAX_RANK];
    int64_t n_elems;
    size_t size_bytes; /* of data, packed little-endian as ONNX raw_data */
    void *data;        /* NULL for strings */
    IrStr *strings;    /* STRING tensors: n_elems entries */
} IrTensor;

/* ---- attributes ------------------------------------------------------------------- */

typedef enum IrAttrKind {
    IR_ATTR_KIND_UNDEF = 0,
    IR_ATTR_KIND_FLOAT = 1,
    IR_ATTR_KIND_INT = 2,
    IR_ATTR_KIND_STRING = 3,
    IR_ATTR_KIND_TENSOR = 4,
    IR_ATTR_KIND_GRAPH = 5,
    IR_ATTR_KIND_FLOATS = 6,
    IR_ATTR_KIND_INTS = 7,
    IR_ATTR_KIND_STRINGS = 8,
    IR_ATTR_KIND_TENSORS = 9,
    IR_ATTR_KIND_GRAPHS = 10,
    IR_ATTR_KIND_SPARSE_TENSOR = 11,
    IR_ATTR_KIND_SPARSE_TENSORS = 12,
    IR_ATTR_KIND_TYPE_PROTO = 13,
    IR_ATTR_KIND_TYPE_PROTOS = 14,
} IrAttrKind;

/* Attribute ids, one per row of attrs.def: IR_ATTR_<OP>_<NAME>. */
typedef enum IrAttrId {
#define ATTR(op, id, name, kind, has_def, idef, fdef, sdef) IR_ATTR_##op##_##id,
#include "attrs.def"
#undef ATTR
    IR_ATTR_COUNT
} IrAttrId;

/* One attribute of a node. Known ops carry one slot per attrs.def row of the op, in table
 * order (present says whether the model set it); unknown ops carry what the model had.
 * Sparse tensors are stored dense. Graphs are indices into the owning graph's subgraphs. */
typedef struct IrAttr {
    uint32_t id;      /* IrAttrId, or IR_NONE on unknown ops */
    const char *name;
    uint8_t kind;     /* IrAttrKind */
    bool present;
    int64_t i;
    float f;
    IrStr s;
    uint32_t n;       /* count of the list below that matches kind */
    int64_t *ints;
    float *floats;
    IrStr *strings;
    IrTensor *tensors; /* TENSOR (n = 1), TENSORS, SPARSE_TENSOR(S) densified */
    uint32_t *graphs;  /* GRAPH (n = 1), GRAPHS */
    IrType *types;     /* TYPE_PROTO (n = 1), TYPE_PROTOS */
} IrAttr;

/* ---- the op table ------------------------------------------------------------------ */

typedef enum IrOpFlag {
    OPF_ELTWISE = 1u << 0,   /* elementwise over its (broadcast) inputs */
    OPF_BCAST = 1u << 1,     /* numpy-style multidirectional broadcasting */
    OPF_COMMUT = 1u << 2,    /* inputs commute */
    OPF_LAYOUT = 1u << 3,    /* result depends on which axis is the channel */
    OPF_ACT = 1u << 5,       /* an activation pass_fuse takes into a producer's epilogue */
    OPF_TAKES_ACT = 1u << 6, /* a producer pass_fuse gives a bias/residual/act epilogue */
    OPF_SUBGRAPH = 1u << 7,  /* carries graph attributes */
    OPF_RANDOM = 1u << 8,    /* output is drawn at random */
} IrOpFlag;

typedef enum IrOp {
    IR_OP_UNKNOWN = 0, /* an op of no known domain; kept by name, has no kernel */
#define OP(id, domain, name, since, in_min, in_max, in_req, out_min, out_max, flags) IR_OP_##id,
#include "ops.def"
#undef OP
    IR_OP_COUNT
} IrOp;

typedef struct IrOpInfo {
    const char *domain;
    const char *name;
    int32_t since_version;
    uint8_t in_min, in_max; /* input positions */
    uint8_t in_req;         /* leading inputs that must be present (ops.def) */
    uint8_t out_min, out_max;
    uint32_t flags;
    uint32_t attr_base;  /* first IrAttrId of this op */
    uint32_t n_attrs;
} IrOpInfo;

typedef struct IrAttrInfo {
    uint16_t op;
    uint8_t kind;
    bool has_default;
    const char *name;
    int64_t def_i;
    float def_f;
    const char *def_s;
} IrAttrInfo;

const IrOpInfo *ir_op_info(IrOp op);
const IrAttrInfo *ir_attr_info(IrAttrId id);
const char *ir_op_name(IrOp op);
bool ir_op_has(IrOp op, uint32_t flags);
/* The op for an ONNX (domain, op_type); "ai.onnx" is the default domain. IR_OP_UNKNOWN
 * when the pair is not in the table. */
IrOp ir_op_lookup(const char *domain, const char *op_type);
/* The attribute id of op named name, or IR_NONE. */
uint32_t ir_attr_lookup(IrOp op, const char *name);

/* ---- values, nodes, graphs --------------------------------------------------------- */

typedef enum IrValueKind {
    IR_VALUE_NODE = 0, /* produced by producer's output result_index */
    IR_VALUE_INPUT,    /* a graph input */
    IR_VALUE_CONST,    /* an initializer; data in tensor */
    IR_VALUE_OUTER,    /* a subgraph's view of the enclosing graph's value `producer` */
} IrValueKind;

typedef struct IrValue {
    const char *name;
    IrType type;
    IrQuant *quant;    /* NULL: not quantized */
    uint8_t kind;      /* IrValueKind */
    uint32_t producer; /* node id (NODE) or outer value id (OUTER), else IR_NONE */
    uint32_t result_index;
    IrTensor *tensor;  /* CONST data; an initializer that is also a graph input has both */
    int64_t mem_offset; /* set by pass_plan_memory: byte offset in the arena, -1 if none */
} IrValue;

typedef struct IrNode {
    uint16_t op; /* IrOp */
    bool dead;
    const char *name;
    const char *op_type; /* as written in the model */
    const char *domain;  /* "" for the default domain */
    int32_t opset;       /* the model's opset version for domain */
    uint32_t *inputs;    /* IR_NONE for an omitted optional input */
    uint32_t n_inputs;
    uint32_t *outputs;
    uint32_t n_outputs;
    IrAttr *attrs;
    uint32_t n_attrs;
} IrNode;

typedef struct IrOpset {
    const char *domain;
    int64_t version;
} IrOpset;

typedef struct IrGraph IrGraph;
struct IrGraph {
    IrArena *arena; /* shared by a root graph and all its subgraphs */
    IrGraph *parent;
    const char *name;
    IrNode *nodes;
    uint32_t n_nodes, cap_nodes;
    IrValue *values;
    uint32_t n_values, cap_values;
    uint32_t *inputs;
    uint32_t n_inputs, cap_inputs;
    uint32_t *outputs;
    uint32_t n_outputs, cap_outputs;
    IrGraph **subgraphs; /* graph attributes of this graph's nodes */
    uint32_t n_subgraphs, cap_subgraphs;
    /* root only */
    IrOpset *opsets;
    uint32_t n_opsets;
    const char **keep_float; /* node names the quantize pass leaves float (--keep-float) */
    uint32_t n_keep_float;
    const char **syms; /* symbolic dimension names */
    uint32_t n_syms, cap_syms;
    int64_t ir_version;
    const char *producer_name;
    const char *producer_version;
    /* memory plan (pass_plan_memory), in bytes */
    int64_t arena_size_bytes;
    int64_t arena_lower_bound_bytes;
    int64_t arena_naive_bytes;
};

IrGraph *ir_graph_new(const char *name);
/* A subgraph of parent, sharing its arena; returns its index in parent->subgraphs. */
uint32_t ir_graph_add_subgraph(IrGraph *parent, const char *name);
void ir_graph_free(IrGraph *g); /* root graphs only; frees all subgraphs */
const IrGraph *ir_graph_root(const IrGraph *g);

uint32_t ir_value_add(IrGraph *g, const char *name, const IrType *type, IrValueKind kind);
/* Appends a node; its input and output arrays are allocated (filled with IR_NONE) and its
 * attribute slots set up from the op table (for IR_OP_UNKNOWN: n_attrs empty slots). */
uint32_t ir_node_add(IrGraph *g, IrOp op, const char *name, uint32_t n_inputs,
                     uint32_t n_outputs, uint32_t n_attrs_unknown);
void ir_graph_add_input(IrGraph *g, uint32_t value);
void ir_graph_add_output(IrGraph *g, uint32_t value);
uint32_t ir_graph_sym(IrGraph *g, const char *name); /* interns; returns id + 1 */
const char *ir_graph_sym_name(const IrGraph *g, uint32_t sym); /* sym as in IrType.syms */
void ir_graph_set_opset(IrGraph *g, const char *domain, int64_t version);
int64_t ir_graph_opset(const IrGraph *g, const char *domain); /* 0 when not imported */
/* Drops dead nodes, renumbering nothing else (value ids stay). */
void ir_graph_compact(IrGraph *g);

/* Uses (ir/uses.c): per value id, how many live nodes, graph outputs and subgraphs (through
 * OUTER values) read it; malloc'd. ir_replace_uses makes every node input and every direct
 * subgraph OUTER reference to `from` read `to` instead (graph outputs are left alone). */
uint32_t *ir_use_counts(const IrGraph *g);
void ir_replace_uses(IrGraph *g, uint32_t from, uint32_t to);

/* Whether node n has input k (a slot that exists and is not an absent optional). */
static inline bool ir_has_input(const IrNode *n, uint32_t k) {
    return k < n->n_inputs && n->inputs[k] != IR_NONE;
}

/* A diagnostic about node n in the one form every layer names a node: "node 'NAME' (Op,
 * opset N)" with Op as domain.Op outside the default domain, then fmt, which carries its
 * own separator (": does not support...", " in subgraph..."). */
void ir_node_diag(Diag *d, DiagLevel level, const IrNode *n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Attribute access on known ops: the slot (present or not) and typed getters that fall
 * back to the op table's default. */
IrAttr *ir_node_attr(const IrNode *n, IrAttrId id);
bool ir_attr_present(const IrNode *n, IrAttrId id);
int64_t ir_attr_i(const IrNode *n, IrAttrId id);
float ir_attr_f(const IrNode *n, IrAttrId id);
const char *ir_attr_s(const IrNode *n, IrAttrId id);
/* Ints list: count in *n_out (0 when absent). */
const int64_t *ir_attr_ints(const IrNode *n, IrAttrId id, uint32_t *n_out);

/* Type helpers. */
static inline bool ir_type_is_container(const IrType *t) {
    return t->kind == IR_TYPE_SEQUENCE || t->kind == IR_TYPE_OPTIONAL;
}
IrType ir_type_tensor(IrDType dtype, int rank, const int64_t *dims);
bool ir_type_is_static(const IrType *t); /* tensor with every dim known */
int64_t ir_type_numel(const IrType *t);  /* -1 when not static */
bool ir_type_equal(const IrType *a, const IrType *b);
IrTensor *ir_tensor_new(IrArena *a, IrDType dtype, int rank, const int64_t *dims);

/* Verifier: SSA (one producer per value, uses after definitions), arity against the op
 * table, attribute kinds, types present on every value. Diagnostics go to d. */
bool ir_verify(const IrGraph *g, Diag *d);
typedef struct IrVerifyOpts {
    bool require_types; /* every used tensor value has a dtype (after shape inference) */
} IrVerifyOpts;
bool ir_verify_opts(const IrGraph *g, const IrVerifyOpts *opts, Diag *d);

/* Shape and type inference over the whole graph (subgraphs included). Keeps declared
 * types where inference knows less; reports conflicts. */
bool ir_infer_shapes(IrGraph *g, Diag *d);
/* The same, and nodes whose outputs partial evaluation computed (shape arithmetic on static
 * shapes) become constant values. */
bool ir_infer_shapes_fold(IrGraph *g, Diag *d);

/* Text form (ir/text_print.c, ir/text_parse.c). With full_data false, tensors larger than
 * IR_PRINT_ELIDE_BYTES are printed as a size and checksum and cannot be parsed back. */
#define IR_PRINT_ELIDE_BYTES 64
typedef struct IrPrintOpts {
    bool full_data;
} IrPrintOpts;
void ir_print(FILE *out, const IrGraph *g, const IrPrintOpts *opts);
char *ir_print_to_string(const IrGraph *g, const IrPrintOpts *opts); /* malloc'd */
IrGraph *ir_parse(const char *text, size_t len, Diag *d);

#endif
