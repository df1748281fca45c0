/* Private interface between the frontend's files: the wire-format depth check, tensor and
 * type conversion, external data, and function inlining. Only frontend sources include
 * this header (it exposes the protobuf-c types of onnx.proto, which nothing else may see). */
#ifndef KILN_FRONTEND_ONNX_INTERNAL_H
#define KILN_FRONTEND_ONNX_INTERNAL_H

#include "frontend/onnx.h"
#include "onnx.pb-c.h"

/* ---- onnx_wire.c ---- */

/* Walks the wire format of buf as a message of type desc and refuses (false, with a
 * diagnostic) nesting deeper than max_depth, truncated fields, groups, wrong wire types
 * of message fields, strings holding NUL and more than ONNX_MAX_NODES nodes. Runs before
 * protobuf-c's recursive unpack. */
bool onnx_wire_check(const uint8_t *buf, size_t len, const ProtobufCMessageDescriptor *desc,
                     int max_depth, Diag *d);

/* ---- name maps (onnx_inline.c): open addressing, keys borrowed (they must outlive it) ---- */

typedef struct OnnxNameMap {
    const char **keys;
    uint32_t *vals;
    uint32_t n, cap;
} OnnxNameMap;

void onnx_namemap_put(OnnxNameMap *m, const char *key, uint32_t val); /* overwrites */
bool onnx_namemap_get(const OnnxNameMap *m, const char *key, uint32_t *val);
void onnx_namemap_free(OnnxNameMap *m);

/* ---- shared loading context ---- */

typedef struct OnnxCtx {
    Diag *d;
    const OnnxLoadOptions *opts;
    const char *base_dir; /* NULL: external data refused */
    char *base_real;      /* realpath(base_dir), malloc'd lazily */
    IrGraph *root;
    IrArena tmp; /* scratch that dies with the load */
    const Onnx__ModelProto *model;
    uint64_t n_inlined_nodes; /* bounded by ONNX_MAX_INLINED_NODES */
    OnnxNameMap prefixes;     /* inlining prefixes handed out, to keep them unique */
    struct OnnxDims *dims;    /* the dimension overrides, resolved (onnx_dims.c) */
} OnnxCtx;

/* ---- onnx_inline.c: nodes flattened, with model-local functions inlined ---- */

/* One call of a model-local function being inlined. */
typedef struct OnnxFrame {
    const Onnx__FunctionProto *fn;
    const char *prefix;                 /* "<caller name>/" */
    const char **actual_in;             /* fn->n_input caller names ("" absent) */
    const char **actual_out;            /* fn->n_output caller names ("" unbound) */
    const Onnx__AttributeProto **attrs; /* the caller's attributes, resolved */
    size_t n_attrs;
    int depth; /* calls this frame sits in, itself included */
} OnnxFrame;

/* A node ready to become an IR node: names already in the graph's namespace. */
typedef struct OnnxFlatNode {
    const char *name, *op_type, *domain; /* domain "" for ai.onnx */
    int64_t opset;
    const char **inputs, **outputs;
    uint32_t n_inputs, n_outputs;
    const Onnx__AttributeProto **attrs; /* ref_attr_name resolved */
    uint32_t n_attrs;
    const OnnxFrame *rename;     /* frame that renamed this node's names (NULL: none) */
    const OnnxFrame *attr_frame; /* function whose attributes nested nodes may refer to */
} OnnxFlatNode;

typedef struct OnnxFlatVec {
    OnnxFlatNode *v;
    uint32_t n, cap;
} OnnxFlatVec;

/* Appends nodes to out, inlining calls of model-local functions recursively. attr_frame:
 * the function body the nodes sit in (at any graph depth), NULL at model level. */
bool onnx_flatten(OnnxCtx *c, Onnx__NodeProto *const *nodes, size_t n_nodes,
                  const OnnxFrame *attr_frame, OnnxFlatVec *out);
/* The graph-level name of a function-body name under frame fr. */
const char *onnx_frame_name(OnnxCtx *c, const OnnxFrame *fr, const char *name);
/* "node 'n' (Op, opset 13)" for diagnostics, in c->tmp. */
const char *onnx_node_desc(OnnxCtx *c, const OnnxFlatNode *f);

/* ---- onnx_tensor.c ---- */

/* Converts a TensorProto into a packed little-endian IrTensor in the root's arena. what
 * names the tensor in diagnostics ("initializer 'w'", "attribute 'value' of node ..."). */
IrTensor *onnx_tensor_convert(OnnxCtx *c, const Onnx__TensorProto *tp, const char *what);
/* Densifies a SparseTensorProto. */
IrTensor *onnx_sparse_convert(OnnxCtx *c, const Onnx__SparseTensorProto *sp, const char *what);
/* Converts a TypeProto (NULL: unknown type). Symbolic dims go to the root's symbols or are
 * replaced by opts->dims. */
bool onnx_type_convert(OnnxCtx *c, const Onnx__TypeProto *tp, IrType *out, const char *what);

/* ---- onnx_dims.c: --dim and --shape overrides, open input axes ---- */

/* Resolves the options' overrides against the main graph's inputs: each shape override's
 * input must exist with that rank and those fixed dims; its symbolic dims become bindings
 * beside the --dim ones (one value per symbol). False, with errors, when one does not fit. */
bool onnx_dims_prepare(OnnxCtx *c, const Onnx__GraphProto *gp);
/* The value bound to symbol name, if any (and marks the binding used). */
bool onnx_dims_bound(OnnxCtx *c, const char *name, int64_t *value);
/* For main-graph input k (type t, already converted): applies its shape override to the
 * axes without a name, and names each axis still open "INPUT[AXIS]". False (an error) when
 * the shape grows past ONNX_MAX_ELEMS. */
bool onnx_dims_input(OnnxCtx *c, uint32_t k, const char *name, IrType *t);
/* After loading: an error for every --dim the model never used (its name is no symbol of
 * the model). False when there was one. */
bool onnx_dims_finish(OnnxCtx *c, const IrGraph *g);

/* ---- onnx_extdata.c ---- */

/* Reads the external bytes of tp (exactly expect_bytes) into the root's arena. */
void *onnx_extdata_read(OnnxCtx *c, const Onnx__TensorProto *tp, size_t expect_bytes,
                        const char *what);

#endif
