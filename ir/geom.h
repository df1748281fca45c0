/* The geometry of convolutions and pools, decoded once from a node's attributes for every
 * consumer: shape inference (output sizes) and both backends (kernel, strides, dilations
 * and the pads that auto_pad resolves to). Conv, FusedConv, ConvInteger, QLinearConv,
 * ConvTranspose, MaxPool, AveragePool and LpPool share one decoder. */
#ifndef KILN_IR_GEOM_H
#define KILN_IR_GEOM_H

#include "ir/ir.h"

#define IR_GEOM_SPATIAL (IR_MAX_RANK - 2) /* spatial dims of a conv-like op (backends take
                                             up to 3) */

typedef enum IrAutoPad {
    IR_AUTO_PAD_NOTSET = 0, /* the pads attribute */
    IR_AUTO_PAD_SAME_UPPER, /* output = ceil(input / stride), the extra pad at the end */
    IR_AUTO_PAD_SAME_LOWER, /* the same, the extra pad at the start */
    IR_AUTO_PAD_VALID       /* no padding */
} IrAutoPad;

/* A conv-like node's attributes, for ns spatial dims, in ONNX order. */
typedef struct IrConvAttrs {
    int ns;
    int64_t k[IR_GEOM_SPATIAL]; /* kernel_shape, else the weights' dims 2.., else -1 */
    int64_t s[IR_GEOM_SPATIAL], d[IR_GEOM_SPATIAL]; /* strides, dilations (default 1) */
    int64_t pads[2 * IR_GEOM_SPATIAL];              /* begins then ends (default 0) */
    bool pads_given;
    IrAutoPad auto_pad;
    bool ceil_mode;                /* pools */
    int64_t group;                 /* convolutions; 1 for pools */
    bool transpose;                /* ConvTranspose: the two below */
    int64_t output_padding[IR_GEOM_SPATIAL];
    const int64_t *output_shape;   /* the attribute (ns or ns + 2 entries), or NULL */
    uint32_t n_output_shape;
} IrConvAttrs;

/* The resolved geometry between input and output sizes (ONNX order, ns entries). */
typedef struct IrConvGeom {
    int ns;
    int64_t group; /* the attribute's (1 for pools) */
    int64_t in[IR_GEOM_SPATIAL], out[IR_GEOM_SPATIAL];
    int64_t k[IR_GEOM_SPATIAL], s[IR_GEOM_SPATIAL], d[IR_GEOM_SPATIAL];
    int64_t pad[IR_GEOM_SPATIAL], pad_end[IR_GEOM_SPATIAL];
} IrConvGeom;

/* Whether op is one of the conv-like ops above. */
bool ir_conv_like(IrOp op);
/* Reads conv-like node n's attributes for ns spatial dims; w (M, C/group, kernel...) gives
 * the kernel when kernel_shape is absent (NULL for pools). False, with *why, when an
 * attribute has the wrong number of entries or a stride or dilation is below 1. */
bool ir_conv_attrs(const IrNode *n, int ns, const IrType *w, IrConvAttrs *a, const char **why);
/* Output size of spatial dim i for an input of size in (-1: unknown), convolution or pool
 * (ceil_mode included) or ConvTranspose (output_shape, output_padding). */
int64_t ir_conv_out_dim(const IrConvAttrs *a, int i, int64_t in);
/* The geometry between spatial sizes in[] and out[] (ns each): auto_pad's pads worked out
 * (for ConvTranspose from output_shape too). False, with *why, for a kernel below 1 or
 * negative pads. */
bool ir_conv_geom(const IrConvAttrs *a, const int64_t *in, const int64_t *out, IrConvGeom *g,
                  const char **why);

/* A broadcast over one run of dims: b (numpy-aligned to y's rank, the same layout) has y's
 * dims except 1s in one contiguous run of y's dims, so y reads as (outer, mid, inner) and b
 * as (outer, inner), b's value repeated over mid (a squeeze-excitation scale (N,1,1,C)
 * over NHWC (N,H,W,C): outer N, mid H*W, inner C). False for any other broadcast, for
 * equal shapes (no dim broadcast) and for dynamic shapes. */
bool ir_bcast_run(const IrType *b, const IrType *y, int64_t *outer, int64_t *mid, int64_t *inner);

#endif
