/* Backend-neutral lowering plans: how a node's work is laid out, worked out once from the
 * IR and rendered by each target in its own dialect (the C loops and runtime calls of
 * backend/c/, the kernels of backend/cuda/). */
#ifndef KILN_BACKEND_PLAN_H
#define KILN_BACKEND_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/ir.h"

#define PLAN_COPY_MAX_DIMS (2 * IR_MAX_RANK) /* dims of one strided copy (Tile takes 2R) */

/* A strided copy y[yoff + sum i*ys] = x[xoff + sum i*xs] over dims, in elements, with unit
 * dims dropped and neighbours that are one run on both sides merged. rank 0: one element;
 * empty: nothing to copy (a dim of 0). */
typedef struct PlanCopy {
    int rank;
    int64_t dims[PLAN_COPY_MAX_DIMS], ys[PLAN_COPY_MAX_DIMS], xs[PLAN_COPY_MAX_DIMS];
    int64_t yoff, xoff;
    bool empty;
} PlanCopy;

void plan_copy(PlanCopy *c, int rank, const int64_t *dims, const int64_t *ys, int64_t yoff,
               const int64_t *xs, int64_t xoff);
/* Whether the copy is one contiguous run on both sides (a memcpy of plan_copy_elems). */
bool plan_copy_contiguous(const PlanCopy *c);
int64_t plan_copy_elems(const PlanCopy *c);
/* The copy of y = transpose(x viewed as dims (rank of them, row-major), perm). */
void plan_permute(PlanCopy *c, int rank, const int64_t *dims, const int *perm);
/* The copy DepthToSpace (DCR or CRD) or SpaceToDepth node n makes of x (rank 4) into its
 * output; false, with *why, for another rank or a blocksize below 1. */
bool plan_depth_space(const IrNode *n, const IrType *x, PlanCopy *c, const char **why);
/* The copy Tile makes of x into y: the repeats are y's dims over x's (empty when x is). */
void plan_tile(const IrType *x, const IrType *y, PlanCopy *c);
/* Row-major strides of dims. */
void plan_strides(const int64_t *dims, int rank, int64_t *st);

/* Element i of integer (or float) tensor t as int64. */
int64_t plan_tensor_i64(const IrTensor *t, int64_t i);

/* The copy that Slice node n makes of x into y, from its starts, ends, axes and steps: the
 * attributes before opset 10, else inputs 1..4 given as constants in[1..4] (NULL: absent;
 * every present input must be constant here). Start and step per axis come from the
 * runtime's own rt_slice_params. False, with *why, for mismatched lists or parameters that
 * disagree with y's shape. */
bool plan_slice(const IrNode *n, const IrType *x, const IrType *y, const IrTensor *const in[5],
                PlanCopy *c, const char **why);

/* A matrix product Y = act(alpha * op(A) @ op(B) + beta * C), as MatMul (numpy batch
 * broadcasting), FusedMatMul, Gemm and FusedGemm mean it. Batches are loops over the
 * output's batch dims of size > 1 with each operand's element stride (0: broadcast); when B
 * is shared and A covers every batch, the batches fold into A's rows (nb 0). Operands are
 * addressed by row and column strides: a (M,K) at a[i*a_rs + k*a_cs], b (K,N), and C
 * broadcast to (M,N) at c[i*c_rs + j*c_cs] (has_c; MatMul's bias is a C of (N)). */
typedef struct PlanGemm {
    int64_t M, N, K;
    int nb;
    int64_t bdim[IR_MAX_RANK], sa[IR_MAX_RANK], sb[IR_MAX_RANK], sy[IR_MAX_RANK];
    bool trans_a, trans_b;
    int64_t a_rs, a_cs, b_rs, b_cs, c_rs, c_cs;
    double alpha, beta;
    bool has_c;
    bool fused;             /* FusedMatMul/FusedGemm: an activation epilogue */
    const char *activation; /* its ONNX name ("" none) */
    double act_alpha, act_beta;
    char why[96]; /* room for a refusal that names sizes */
} PlanGemm;

/* The plan of MatMul, FusedMatMul, Gemm or FusedGemm node n over a, b, c (NULL: none) and
 * y. False, with *why, for shapes that do not multiply or broadcast. */
bool plan_gemm(const IrNode *n, const IrType *a, const IrType *b, const IrType *c,
               const IrType *y, PlanGemm *p, const char **why);

/* Softmax, LogSoftmax and Hardmax over rows: the input as (outer, len, inner), reduced
 * along len. The axis defaults to -1, or to 1 before opset 13, where the input is also
 * flattened to 2-D at the axis (inner 1). False, with *why, for an axis out of range. */
typedef struct PlanRows {
    int64_t outer, len, inner;
} PlanRows;
bool plan_softmax_rows(const IrNode *n, const IrType *x, PlanRows *r, const char **why);

/* Packed fp32 weights (runtime/rt_pgemm.h): the C target's prepare step rewrites
 * - the constant (KH,KW,C/group,M) weights of every channels-last f32 Conv and FusedConv
 *   that the packed GEMM runs (not depthwise), and
 * - the constant 2-D B of every f32 MatMul, FusedMatMul, Gemm and FusedGemm whose A rows
 *   are contiguous (no transA; batches folded into rows), alpha 1 and C absent or a bias of
 *   (N) with beta 1 (transB is undone by the packing),
 * into a new constant of dims (G, NP, KH, KW, C/group, 16), NP = ceil((M/G)/16) (a product:
 * (1, NP, 1, 1, K, 16) for its N columns): panel p of group g holds output channels
 * g*M/G + p*16 .. +15 (zeros past M/G), one row of 16 per reduction index (kh, kw, c).
 * The emitters tell packed weights by their rank (6).
 * Before that, a FusedConv act(conv3(a) + b3 + r) that is a 1x1 of unit stride, no padding
 * and one group, whose residual r is read by it alone and made by a 1x1 Conv/FusedConv of
 * x, stride s, no padding, no activation (a ResNet stage's first bottleneck: its
 * downsample), with x's sides the output's times s and channels of greatest common divisor
 * 16 or more, becomes one product: inputs (a, the packed [W3; Wd] of C3 + Cd rows, b3 + bd,
 * none, x) (ops.def's X2; runtime/rt_pgemm.h's rt_pconv2_nhwc), and the downsample dies:
 * its output (3.2 MB at ResNet-50's 56x56x256) is never written nor read back. */
#define PLAN_PGEMM_NR 16         /* = RT_PGEMM_NR: output channels per panel */
#define PLAN_PGEMM_RANK 6
/* With winograd, the weights of an f32 channels-last 3x3 Conv/FusedConv of stride 1,
 * dilation 1 and group 1 whose sizes plan_wino_pays become the Winograd F(4x4, 3x3)
 * transform of runtime/rt_wino.h instead: dims (6, 6, NP, C, 16), NP = ceil(M/16), one
 * packed (C, M) matrix per point of the 6x6 transform. The emitters tell them by rank (5). */
#define PLAN_WINO_RANK 5
/* The rule, from bench/kernels/wino.c's sweep on AVX2 (C = M, Winograd / packed time, warm
 * caches): 16 channels 1.07-1.29 (one panel: the transforms cost what the 4x fewer
 * products save), 32: 0.71-0.89, 64 and 128: 0.42-0.75, 256: 0.69-0.85, 512: 1.9-3.0; and
 * from bench/cpu/profile.py inside ResNet-50 (weights cold, as in a model): 64@56x56 and
 * 128@28x28 0.57, but 256@14x14 1.55: the stack block held 4 tiles of 256 channels (3 now)
 * (rt_wino_block), so the 36 x C x M transformed weights (9.4 MB, 4x the direct ones)
 * stream from memory once per 4 tiles. Sides below 8 waste the tiles' rows (7x7: 0.69-2.1,
 * 4x4: 1.6-2.4). Since the block lives in the workers' scratch (rt_wino_ws_floats: 14 tiles
 * on AVX-512, 18 on AVX2) 256 channels pay too: lab 0.63-0.84 (AVX-512), 0.66 (AVX2 build),
 * inside ResNet-50 256@14x14 2.33-2.52 -> 1.81-2.08 ms a layer (AVX-512 EPYC, profile.py,
 * two alternating rounds); 512@7x7 stays at 0.95-1.03, and with the products in calls of
 * their own rows (4 tiles: 4 rows, not 14) still ties: weights cold, 2.1-2.4 ms against
 * 2.25 packed (37.7 MB of transformed weights stream where the packed ones are 9.4). */
#define PLAN_WINO_MIN_CHANNELS 32  /* C and M */
#define PLAN_WINO_MAX_CHANNELS 256 /* C */
#define PLAN_WINO_MIN_SIDE 8       /* OH and OW */
/* Whether a 3x3 stride-1 convolution of C -> M channels and an OH x OW output runs faster
 * on Winograd than on the packed GEMM: measured per shape by bench/kernels/wino.c
 * (docs/cpu-bench.md). Inline so that the kernel lab prints the rule it measures. */
static inline bool plan_wino_pays(int64_t C, int64_t M, int64_t OH, int64_t OW) {
    return C >= PLAN_WINO_MIN_CHANNELS && M >= PLAN_WINO_MIN_CHANNELS &&
           C <= PLAN_WINO_MAX_CHANNELS && OH >= PLAN_WINO_MIN_SIDE && OW >= PLAN_WINO_MIN_SIDE;
}
/* F(2x2, 3x3) (runtime/rt_wino.h's rt_wino2_*: dims (4, 4, NP, C, 16), told from F(4x4)'s
 * by dims[0]) for what F(4x4) leaves: more than 256 input channels (ResNet-50's 512@7x7)
 * on a 7x7 or 8x8 output, one block of 16 tiles of 2x2 pixels. Its 16 x C x M transformed
 * weights (16.8 MB at 512 channels) are 16/9 the direct ones where F(4x4)'s were 4x (37.7
 * MB: it tied the packed GEMM), for 256 / 441 of the direct FMAs at 7x7 (the 8x8 tiles
 * cover 64 pixels for 49): 1.80-1.89 ms a layer in ResNet-50 against 2.20-2.21 packed
 * (bench/cpu/resnet50-profile.md, 2026-11-29 session 14). */
#define PLAN_WINO2_MAX_CHANNELS 1024 /* C: the workspace is 36 x 28 x (C + 32) floats */
static inline bool plan_wino2_pays(int64_t C, int64_t M, int64_t OH, int64_t OW) {
    return C > PLAN_WINO_MAX_CHANNELS && C <= PLAN_WINO2_MAX_CHANNELS &&
           M >= PLAN_WINO_MIN_CHANNELS && (OH + 1) / 2 == 4 && (OW + 1) / 2 == 4;
}
/* Stride 2 (runtime/rt_wino.h's rt_winos2_*: dims (16, 1, NP, C, 16)): the 3x3 stride-2
 * layers of 32 to 256 input channels whose output is at least 8x8 (ResNet-50's 128@56->28
 * and 256@28->14), as four stride-1 convolutions on the input's phases with F(2, 2) along
 * each dimension of two taps: 25 products a tile of 2x2 pixels (0.69x the direct FMAs), 16
 * matrices of weights (16/9 the direct bytes; at 512@14->7 the 8x8 tiles of a 7x7 output
 * keep 0.91x of the FMAs for them: 2.58 ms against 2.42-2.45 packed, so not there). In
 * ResNet-50: 128@56->28 1.98 ms against 2.20 packed, 256@28->14 2.07 against 2.14. */
static inline bool plan_winos2_pays(int64_t C, int64_t M, int64_t OH, int64_t OW) {
    return plan_wino_pays(C, M, OH, OW);
}
bool plan_pack_weights_f32(IrGraph *g, bool winograd, Diag *d);

#endif
