/* The CUDA backend (DESIGN.md, "Backends and the bundle"): the CUDA dialect of the C-like
 * emitter. cuda.c drives emission and writes the bundle (NAME.h, NAME.cu, the kc_*.cuh
 * runtime files, weights, CMakeLists.txt, README.md, optional test main); cuda_ops.c holds
 * the per-op emitters in a table indexed by op id, like cgen_emit_table. Values are placed
 * exactly as in the C backend (cgen_ptr on one device arena and the weights). */
#ifndef KILN_BACKEND_CUDA_H
#define KILN_BACKEND_CUDA_H

#include "backend/c/cgen.h"

typedef enum CudaPrecision {
    CUDA_PREC_FP32 = 0, /* float32 products, no TF32 (CUBLAS_COMPUTE_32F) */
    CUDA_PREC_FP16      /* float16 storage (pass_fp16) and fp16 tensor-core products with
                         * fp32 accumulation; float32 graph inputs and outputs */
} CudaPrecision;

/* How channels-last convolutions that are not plain 1x1 ones are lowered: im2col + a
 * cuBLASLt product, or an implicit GEMM (kc_igemm.cuh; float16, one group, channels in
 * eights); auto picks per convolution by the rule measured in docs/gpu-bench.md. */
typedef enum CudaConvLowering {
    CUDA_CONV_AUTO = 0,
    CUDA_CONV_IM2COL,
    CUDA_CONV_IMPLICIT
} CudaConvLowering;

typedef struct CudaOptions {
    CudaPrecision prec;
    CudaConvLowering conv;
    bool io16; /* with CUDA_PREC_FP16: float16 graph inputs and outputs (--fp16-io) */
} CudaOptions;

/* runtime files one bundle can use: the kc_*.cuh files and the C runtime's rt_*.h */
#define CUDA_MAX_RUNTIME (CGEN_MAX_RUNTIME + 8)

typedef struct CudaCtx {
    CgenCtx c;           /* placement, scratch, the enqueue body (c.w) */
    CWriter *kernels;    /* the __global__ kernels specialised per node */
    CudaPrecision prec;
    CudaConvLowering conv;
    uint32_t n_kernels;
    int64_t col_bytes;   /* the largest im2col workspace of a convolution */
    bool uses_status;    /* a kernel may raise a status on bad data */
    const char *rt[CUDA_MAX_RUNTIME];
    uint32_t n_rt;
    uint32_t n_generic;  /* nodes run as the C backend's code on one device thread */
    uint32_t n_parallel; /* nodes run as the C backend's code on one thread per output element */
    uint32_t n_prof;     /* nodes timed by NAME_cuda_profile, in emission order */
    uint32_t n_lt_sites; /* kc_lt_matmul calls emitted: the context's KcLtSite slots */
    const char **prof_name, **prof_kind; /* per profiled node: "OpType name", its path */
    double *prof_flops, *prof_bytes; /* per profiled node: arithmetic, tensor bytes touched */
    const struct DevLayout *layout; /* the device allocation, once laid out */
    const uint32_t *uses; /* ir_use_counts of the graph while the body is emitted, else NULL */
} CudaCtx;

typedef bool (*CudaEmitFn)(CudaCtx *cx, const IrNode *n);

/* The kernel column of the CUDA backend: one entry per op id, NULL where none exists. */
extern CudaEmitFn cuda_emit_table[IR_OP_COUNT];
void cuda_tables_init(void);
bool cuda_op_supported(IrOp op);

/* "&ctx->lt_sites[i], ctx->lt_tuning" for the next kc_lt_matmul call: its product site i
 * (numbered in emission order), whose algorithm NAME_cuda_tune chooses. */
const char *cuda_lt_site(CudaCtx *cx);

/* Records that the bundle needs runtime/cuda/FILE (e.g. "kc_nn.cuh") or runtime/FILE. */
void cuda_use_runtime(CudaCtx *cx, const char *file);

/* The graph input that convolution n reads through kc_stem_tc, channels-first in its own
 * type, and in folds the Transpose into NHWC and the Cast (or IR_NONE) its kernel does
 * instead; IR_NONE where n is no such stem (cuda_ops.c). Needs cx->uses. */
uint32_t cuda_stem_input(CudaCtx *cx, const IrNode *n, uint32_t folds[2]);

/* The same for an int8 stem (cuda_qint8.c): the float32 NCHW graph input that QConv n reads
 * through kc_qconv_f32nchw, and in folds the Transpose into NHWC and the QuantizeLinear
 * (either order) that it does instead (a quantize pass into the QConv's planned input, or
 * its gather: KC_QSTEM_GATHER); IR_NONE where n is no such stem. Needs
 * cx->uses. */
uint32_t cuda_qstem_input(CudaCtx *cx, const IrNode *n, uint32_t folds[2]);

/* The generic path (cuda_ops.c): node n as the C backend's code (cgen_emit_table), inside a
 * __global__ kernel run by one device thread; its status goes to the device status word.
 * For every op with a C kernel, and for nodes whose fast CUDA kernel refuses them. */
bool cuda_emit_generic(CudaCtx *cx, const IrNode *n);


/* An Add and the LayerNormalization right after it, the only reader of its sum, as one
 * kernel (kc_add_layernorm) where the types, shapes and the arena placement allow it; false
 * (nothing written) otherwise. The caller checked that ln reads the sum alone. */
bool cuda_emit_add_layernorm(CudaCtx *cx, const IrNode *add, const IrNode *ln);

/* The int8 kernels (cuda_qint8.c): the weights' GPU layout, made by the target's prepare
 * step (the rest get the C target's packing), and the emitters of the quantize pass's ops. */
bool cuda_qint8_prepare(IrGraph *g, Diag *d);
void cuda_register_qint8(CudaEmitFn *table);

#endif
