/* The ONNX frontend: decodes a ModelProto (untrusted input) into an IrGraph. The only
 * part of Kiln that sees the protobuf-c types. */
#ifndef KILN_FRONTEND_ONNX_H
#define KILN_FRONTEND_ONNX_H

#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

/* Limits on untrusted input; anything larger is refused with a diagnostic. */
#define ONNX_MAX_NESTING 64          /* message nesting (graphs within attributes...) */
#define ONNX_MAX_ELEMS (1LL << 40)   /* elements of one tensor */
#define ONNX_MAX_FILE_BYTES (1LL << 34)
#define ONNX_MAX_INLINE_DEPTH 32        /* nested model-local function calls */
#define ONNX_MAX_INLINED_NODES (1u << 18) /* nodes after inlining: stops call bombs (at 2^22,
                                             a 2^25 bomb took 76 s and 6 GB to refuse) */
#define ONNX_MAX_NODES (1u << 18) /* nodes in the file, all graphs and functions: 4-10 times
                                     the largest exported models; 10^6 Relu nodes took 1.3 GB
                                     to load and 21 s to compile */
#define ONNX_MAX_SPARSE_DENSE_BYTES (1LL << 31) /* densified sparse tensor: a 2 GiB cap, since
                                                   a few bytes of input could ask for far more */
#define ONNX_MAX_SPARSE_EXPANSION 256 /* and at most this many dense bytes per stored byte
                                         (values and indices; 99.9 % sparse weights pass)... */
#define ONNX_SPARSE_DENSE_FREE_BYTES (1LL << 20) /* ...above 1 MiB: 17 bytes asked for 2 GiB */

typedef struct OnnxDimOverride {
    const char *name; /* a symbolic dimension (dim_param), or an open input axis "x[2]"
                         (ir/open_dims.h: graph inputs' dims without value or name, -1
                         included, load as symbols named after the input and the axis) */
    int64_t value;
} OnnxDimOverride;

/* The whole shape of one graph input (--shape x=1x3x48x192): its rank and every dim must
 * agree with the model's fixed dims; its symbolic dims take these values everywhere. */
typedef struct OnnxShapeOverride {
    const char *input;
    int rank;
    int64_t dims[IR_MAX_RANK];
} OnnxShapeOverride;

typedef struct OnnxLoadOptions {
    const OnnxDimOverride *dims; /* --dim NAME=VALUE */
    uint32_t n_dims;
    bool infer_shapes;           /* run ir_infer_shapes after loading (default on in kiln) */
    const OnnxShapeOverride *shapes; /* --shape INPUT=DxDx... */
    uint32_t n_shapes;
    /* Out, may be NULL: the number of overrides that do not fit the model (a name it lacks,
     * a rank or a fixed dim that differs, two values for one symbol), each also an error
     * in the diagnostics. Lets a command tell a bad option from a bad model. */
    uint32_t *n_override_errors;
} OnnxLoadOptions;

/* Loads path; external data is read relative to its folder. NULL on error (in d). */
IrGraph *onnx_load_file(const char *path, const OnnxLoadOptions *opts, Diag *d);
/* Loads a serialized model from memory. base_dir NULL refuses external data. */
IrGraph *onnx_load_buffer(const uint8_t *buf, size_t len, const char *base_dir,
                          const OnnxLoadOptions *opts, Diag *d);

#endif
