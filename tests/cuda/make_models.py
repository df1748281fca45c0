"""Writes the small generated models of the CUDA backend's tests into a folder:
cuda_eltwise (broadcasting arithmetic, activations, Where, Cast, Clip, Max), cuda_cnn
(Conv with groups, depthwise Conv, BatchNormalization, pools, Gemm, Softmax), cuda_convs
(channels-last convolutions: strides, dilation, SAME padding, groups, depthwise with a
multiplier, residual, ReLU6, HardSwish, pools) and
cuda_attn (batched MatMul, LayerNormalization, Gelu, Transpose, Concat, Slice, Gather,
Expand, Reshape, LogSoftmax), cuda_fattn (FusedAttention: both kc_attn.cuh kernels, masks,
scales, tile edges), cuda_qkv (Q, K, V projections of one input: one packed product read
through windows) and cuda_generic (ops without a CUDA kernel, which run the C
backend's code on one device thread: ReduceMean, TopK, NonZero with its run-time count,
If with subgraphs, TensorScatter's memmove). Seeded: the same bytes every run.
usage: make_models.py OUT_DIR"""
import sys
import pathlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def save(out, name, nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, str(out / f"{name}.onnx"))


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    r = lambda *s: rng.standard_normal(s).astype(np.float32)

    nodes = [
        helper.make_node("Add", ["x", "b"], ["t0"]),
        helper.make_node("Mul", ["t0", "y"], ["t1"]),
        helper.make_node("Sigmoid", ["t1"], ["t2"]),
        helper.make_node("Tanh", ["t0"], ["t3"]),
        helper.make_node("Greater", ["t2", "half"], ["c"]),
        helper.make_node("Where", ["c", "t3", "t1"], ["t4"]),
        helper.make_node("Clip", ["t4", "lo", "hi"], ["t5"]),
        helper.make_node("Max", ["t5", "t0", "b"], ["t6"]),
        helper.make_node("Cast", ["c"], ["ci"], to=TensorProto.INT32),
        helper.make_node("Div", ["t6", "y"], ["z"]),
        helper.make_node("Erf", ["z"], ["e"]),
    ]
    save(out, "cuda_eltwise", nodes, [f32("x", [2, 3, 4, 5]), f32("y", [4, 1])],
         [f32("e", [2, 3, 4, 5]), helper.make_tensor_value_info("ci", TensorProto.INT32, [2, 3, 4, 5])],
         [init("b", r(5)), init("half", np.float32(0.5)), init("lo", np.float32(-1.5)),
          init("hi", np.float32(1.5))])

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c1", "s", "bb", "m", "v"], ["n1"]),
        helper.make_node("Relu", ["n1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], group=8),
        helper.make_node("Conv", ["c2", "w3", "b3"], ["c3"], group=2, kernel_shape=[1, 1]),
        helper.make_node("MaxPool", ["c3"], ["p1"], kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        helper.make_node("AveragePool", ["p1"], ["p2"], kernel_shape=[2, 2], pads=[0, 0, 1, 1],
                         count_include_pad=0),
        helper.make_node("GlobalAveragePool", ["p2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "wg", "bg"], ["l"], transB=1),
        helper.make_node("Softmax", ["l"], ["prob"]),
    ]
    save(out, "cuda_cnn", nodes, [f32("x", [2, 3, 17, 17])], [f32("prob", [2, 10])],
         [init("w1", r(8, 3, 3, 3) * 0.3), init("b1", r(8)), init("s", r(8)), init("bb", r(8)),
          init("m", r(8)), init("v", np.abs(r(8)) + 0.5), init("w2", r(8, 1, 3, 3) * 0.3),
          init("w3", r(16, 4, 1, 1) * 0.3), init("b3", r(16)), init("wg", r(10, 16)),
          init("bg", r(10))])

    # channels-last convolutions (the layout pass makes this region NHWC): strided and
    # dilated 3x3, a strided 1x1 (im2col, not the direct path), SAME_UPPER padding, groups
    # with a 3x3 kernel, depthwise with multiplier 2, residual + ReLU in the epilogue, ReLU6
    # (Clip: a pass after the product) and HardSwish, both pools and a global average; a
    # last 3x2 convolution with uneven pads and strides and a partial channel tile (40);
    # depthwise with multiplier 1 over 16 channels (kc_nn.cuh's channel-vectorized kernel):
    # 3x3 with bias and ReLU6, 5x5 strided with SiLU
    nodes = [
        helper.make_node("Conv", ["x", "v1", "c1b"], ["a1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["a1"], ["a1r"]),
        helper.make_node("Conv", ["a1r", "v2"], ["a2"], pads=[2, 2, 2, 2], dilations=[2, 2]),
        helper.make_node("Add", ["a2", "a1r"], ["a2s"]),
        helper.make_node("Relu", ["a2s"], ["a2r"]),
        helper.make_node("Conv", ["a2r", "v3", "c3b"], ["a3"], group=4, pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["a3", "lo0", "hi6"], ["a3c"]),
        helper.make_node("Conv", ["a3c", "v4"], ["a4"], group=8, auto_pad="SAME_UPPER",
                         kernel_shape=[3, 3], strides=[2, 2]),
        helper.make_node("HardSwish", ["a4"], ["a4h"]),
        helper.make_node("Conv", ["a4h", "v5", "c5b"], ["a5"], kernel_shape=[1, 1],
                         strides=[2, 2]),
        helper.make_node("MaxPool", ["a5"], ["q1"], kernel_shape=[2, 2], ceil_mode=1),
        helper.make_node("AveragePool", ["a4h"], ["q2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                         count_include_pad=1),
        helper.make_node("GlobalAveragePool", ["q2"], ["gq"]),
        helper.make_node("Conv", ["a5", "v6", "c6b"], ["a6"], pads=[1, 0, 2, 1],
                         strides=[1, 2]),
        helper.make_node("Sigmoid", ["a6"], ["q3"]),
        helper.make_node("Conv", ["a4h", "v7", "c7b"], ["a7"], group=16, pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["a7", "lo0", "hi6"], ["a7c"]),
        helper.make_node("Conv", ["a7c", "v8"], ["a8"], group=16, pads=[2, 2, 2, 2],
                         strides=[2, 2]),
        helper.make_node("Sigmoid", ["a8"], ["a8s"]),
        helper.make_node("Mul", ["a8", "a8s"], ["q4"]),
    ]
    save(out, "cuda_convs", nodes, [f32("x", [2, 4, 19, 19])],
         [f32("q1", [2, 24, 2, 2]), f32("gq", [2, 16, 1, 1]), f32("q3", [2, 40, 4, 2]),
          f32("q4", [2, 16, 3, 3])],
         [init("v1", r(8, 4, 3, 3) * 0.3), init("c1b", r(8)), init("v2", r(8, 8, 3, 3) * 0.2),
          init("v3", r(8, 2, 3, 3) * 0.3), init("c3b", r(8)), init("lo0", np.float32(0)),
          init("hi6", np.float32(6)), init("v4", r(16, 1, 3, 3) * 0.3),
          init("v5", r(24, 16, 1, 1) * 0.3), init("c5b", r(24)),
          init("v6", r(40, 24, 3, 2) * 0.2), init("c6b", r(40)),
          init("v7", r(16, 1, 3, 3) * 0.5), init("c7b", r(16)), init("v8", r(16, 1, 5, 5) * 0.3)])

    nodes = [
        helper.make_node("Gather", ["emb", "ids"], ["h"], axis=0),
        helper.make_node("LayerNormalization", ["h", "ls", "lb"], ["hn"], axis=-1),
        helper.make_node("MatMul", ["hn", "wq"], ["q"]),
        helper.make_node("Reshape", ["q", "shp"], ["q4"]),
        helper.make_node("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["q4"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("MatMul", ["qt", "kt"], ["att"]),
        helper.make_node("Softmax", ["att"], ["pa"], axis=-1),
        helper.make_node("MatMul", ["pa", "qt"], ["ctx"]),
        helper.make_node("Gelu", ["ctx"], ["ge"]) if OPSET >= 20 else
        helper.make_node("Erf", ["ctx"], ["ge"]),
        helper.make_node("Slice", ["ge", "st", "en", "ax"], ["sl"]),
        helper.make_node("Concat", ["sl", "sl"], ["cc"], axis=3),
        helper.make_node("Expand", ["bias4", "eshape"], ["ex"]),
        helper.make_node("Add", ["cc", "ex"], ["sum"]),
        helper.make_node("LogSoftmax", ["sum"], ["out"], axis=1),
    ]
    save(out, "cuda_attn", nodes, [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 6])],
         [f32("out", [2, 2, 6, 8])],
         [init("emb", r(50, 16)), init("ls", r(16)), init("lb", r(16)), init("wq", r(16, 16) * 0.3),
          init("shp", np.array([2, 6, 2, 8], np.int64)),
          init("st", np.array([0], np.int64)), init("en", np.array([4], np.int64)),
          init("ax", np.array([3], np.int64)), init("bias4", r(1, 1, 1, 8)),
          init("eshape", np.array([2, 2, 6, 8], np.int64))])

    # FusedAttention (kc_attn.cuh), four forms. a: BERT's layout (B,S,H,D) read through
    # Transposes, Div scale, a full (B,H,Sq,Sk) additive mask with -1e4 entries, Sq = 37 and
    # Sk = 70 (past one 64-key tile), D 32: the tensor-core kernel in fp16. b: (B,H,S,D) as
    # stored, Mul scale, no mask, D 48 (tensor cores). c: D 40 and Dv 24, a (1,1,1,Sk) mask:
    # the tiled float kernel in fp16 too. d: rank 3 (no head dimension), D 16, Sq 5 < one row tile.
    # e: 140 heads of 70 rows (the four-warp blocks), D 16. f: D 128, the largest head size
    # of the tensor-core and tiled float kernels. g: D 160, Dv 136: one warp per row.
    nodes = [
        helper.make_node("Transpose", ["aq"], ["aqt"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["ak"], ["akt"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["av"], ["avt"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["aqt", "akt"], ["as"]),
        helper.make_node("Div", ["as", "a_sc"], ["ad"]),
        helper.make_node("Add", ["ad", "amask"], ["am"]),
        helper.make_node("Softmax", ["am"], ["ap"], axis=-1),
        helper.make_node("MatMul", ["ap", "avt"], ["ay"]),
        helper.make_node("Transpose", ["ay"], ["ya"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["bk"], ["bkt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["bq", "bkt"], ["bs"]),
        helper.make_node("Mul", ["bs", "b_sc"], ["bm"]),
        helper.make_node("Softmax", ["bm"], ["bp"], axis=-1),
        helper.make_node("MatMul", ["bp", "bv"], ["yb"]),
        helper.make_node("MatMul", ["cq", "ck"], ["cs"]),
        helper.make_node("Add", ["cs", "cmask"], ["cm"]),
        helper.make_node("Softmax", ["cm"], ["cp"], axis=-1),
        helper.make_node("MatMul", ["cp", "cv"], ["yc"]),
        helper.make_node("Transpose", ["dk"], ["dkt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["dq", "dkt"], ["ds"]),
        helper.make_node("Mul", ["ds", "d_sc"], ["dm"]),
        helper.make_node("Softmax", ["dm"], ["dp"], axis=-1),
        helper.make_node("MatMul", ["dp", "dv"], ["yd"]),
        helper.make_node("Transpose", ["ek"], ["ekt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["eq", "ekt"], ["es"]),
        helper.make_node("Mul", ["es", "e_sc"], ["em"]),
        helper.make_node("Softmax", ["em"], ["ep"], axis=-1),
        helper.make_node("MatMul", ["ep", "ev"], ["ye"]),
        helper.make_node("Transpose", ["fk"], ["fkt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["fq", "fkt"], ["fs"]),
        helper.make_node("Mul", ["fs", "f_sc"], ["fm"]),
        helper.make_node("Softmax", ["fm"], ["fp"], axis=-1),
        helper.make_node("MatMul", ["fp", "fv"], ["yf"]),
        helper.make_node("Transpose", ["gk"], ["gkt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["gq", "gkt"], ["gs"]),
        helper.make_node("Mul", ["gs", "g_sc"], ["gm"]),
        helper.make_node("Softmax", ["gm"], ["gp"], axis=-1),
        helper.make_node("MatMul", ["gp", "gv"], ["yg"]),
    ]
    amask = np.where(rng.random((2, 3, 37, 70)) < 0.2, -1e4, 0.1 * r(2, 3, 37, 70))
    save(out, "cuda_fattn", nodes,
         [f32("aq", [2, 37, 3, 32]), f32("ak", [2, 70, 3, 32]), f32("av", [2, 70, 3, 32]),
          f32("bq", [2, 2, 50, 48]), f32("bk", [2, 2, 50, 48]), f32("bv", [2, 2, 50, 48]),
          f32("cq", [3, 2, 9, 40]), f32("ck", [3, 2, 40, 66]), f32("cv", [3, 2, 66, 24]),
          f32("dq", [4, 5, 16]), f32("dk", [4, 130, 16]), f32("dv", [4, 130, 16]),
          f32("eq", [1, 140, 70, 16]), f32("ek", [1, 140, 70, 16]), f32("ev", [1, 140, 70, 16]),
          f32("fq", [1, 2, 20, 128]), f32("fk", [1, 2, 20, 128]), f32("fv", [1, 2, 20, 128]),
          f32("gq", [1, 2, 9, 160]), f32("gk", [1, 2, 12, 160]), f32("gv", [1, 2, 12, 136])],
         [f32("ya", [2, 37, 3, 32]), f32("yb", [2, 2, 50, 48]), f32("yc", [3, 2, 9, 24]),
          f32("yd", [4, 5, 16]), f32("ye", [1, 140, 70, 16]), f32("yf", [1, 2, 20, 128]),
          f32("yg", [1, 2, 9, 136])],
         [init("a_sc", np.float32(np.sqrt(32))), init("amask", amask.astype(np.float32)),
          init("b_sc", np.float32(1 / np.sqrt(48))), init("cmask", r(1, 1, 1, 66)),
          init("d_sc", np.float32(0.25)), init("e_sc", np.float32(0.25)),
          init("f_sc", np.float32(1 / np.sqrt(128))), init("g_sc", np.float32(0.08))])

    # Packed projections (passes/fuse_horizontal.c): products that read one input become one
    # product and a Split; the attentions read Q, K, V as windows of it. h: BERT's form, x
    # (2,24,96) -> MatMul + bias Adds -> (B,S,3,32) -> Transposes, a (B,1,1,S) mask, columns
    # 96 and 192 on 16-byte boundaries (the tensor-core kernel in fp16), and a fourth MatMul
    # of x whose result is a graph output (its Split output stays a copy). i: Gemms with
    # transB and C on a 2-D z (10,36), heads of 12 at columns 36 and 72 (the row kernel).
    nodes = []
    for p, w in (("q", "hwq"), ("k", "hwk"), ("v", "hwv")):
        nodes += [helper.make_node("MatMul", ["hx", w], ["h" + p + "m"]),
                  helper.make_node("Add", ["h" + p + "m", "hb" + p], ["h" + p + "a"]),
                  helper.make_node("Reshape", ["h" + p + "a", "hshape"], ["h" + p + "r"])]
    nodes += [
        helper.make_node("MatMul", ["hx", "hwo"], ["yh2"]),
        helper.make_node("Transpose", ["hqr"], ["hqt"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["hkr"], ["hkt"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["hvr"], ["hvt"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["hqt", "hkt"], ["hs"]),
        helper.make_node("Div", ["hs", "h_sc"], ["hd"]),
        helper.make_node("Add", ["hd", "hmask"], ["hm"]),
        helper.make_node("Softmax", ["hm"], ["hp"], axis=-1),
        helper.make_node("MatMul", ["hp", "hvt"], ["hy"]),
        helper.make_node("Transpose", ["hy"], ["hyt"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["hyt", "hout"], ["yh"]),
    ]
    for p in ("q", "k", "v"):
        nodes += [helper.make_node("Gemm", ["iz", "iw" + p, "ib" + p], ["i" + p + "g"], transB=1,
                                   beta=0.5),
                  helper.make_node("Reshape", ["i" + p + "g", "ishape"], ["i" + p + "r"]),
                  helper.make_node("Transpose", ["i" + p + "r"], ["i" + p + "t"],
                                   perm=[1, 2, 0] if p == "k" else [1, 0, 2])]
    nodes += [
        helper.make_node("MatMul", ["iqt", "ikt"], ["is"]),
        helper.make_node("Mul", ["is", "i_sc"], ["im"]),
        helper.make_node("Softmax", ["im"], ["ip"], axis=-1),
        helper.make_node("MatMul", ["ip", "ivt"], ["yi"]),
    ]
    hmask = np.where(rng.random((2, 1, 1, 24)) < 0.25, -1e4, 0.0)
    save(out, "cuda_qkv", nodes, [f32("hx", [2, 24, 96]), f32("iz", [10, 36])],
         [f32("yh", [2, 24, 96]), f32("yh2", [2, 24, 40]), f32("yi", [3, 10, 12])],
         [init("hwq", 0.2 * r(96, 96)), init("hwk", 0.2 * r(96, 96)), init("hwv", 0.2 * r(96, 96)),
          init("hwo", 0.2 * r(96, 40)), init("hbq", r(96)), init("hbk", r(96)), init("hbv", r(96)),
          init("hshape", np.array([2, 24, 3, 32], np.int64)),
          init("hout", np.array([2, 24, 96], np.int64)), init("h_sc", np.float32(np.sqrt(32))),
          init("hmask", hmask.astype(np.float32)),
          init("iwq", 0.3 * r(36, 36)), init("iwk", 0.3 * r(36, 36)), init("iwv", 0.3 * r(36, 36)),
          init("ibq", r(36)), init("ibk", r(1, 36)), init("ibv", r(36)),
          init("ishape", np.array([10, 3, 12], np.int64)), init("i_sc", np.float32(0.3))])

    then_g = helper.make_graph([helper.make_node("Add", ["x", "x"], ["tb"])], "then_b", [],
                               [f32("tb", [4, 6])])
    else_g = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["eb"])], "else_b", [],
                               [f32("eb", [4, 6])])
    nodes = [
        helper.make_node("Relu", ["x"], ["xr"]),
        helper.make_node("ReduceMean", ["xr"], ["rm"], axes=[1], keepdims=1),
        helper.make_node("TopK", ["x", "k"], ["vals", "idx"], axis=1),
        helper.make_node("Greater", ["x", "zero"], ["mask"]),
        helper.make_node("NonZero", ["mask"], ["nz"]),
        helper.make_node("If", ["cond"], ["br"], then_branch=then_g, else_branch=else_g),
    ]
    save(out, "cuda_generic", nodes,
         [f32("x", [4, 6]), helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
         [f32("rm", [4, 1]), f32("vals", [4, 3]),
          helper.make_tensor_value_info("idx", TensorProto.INT64, [4, 3]),
          helper.make_tensor_value_info("nz", TensorProto.INT64, [2, None]), f32("br", [4, 6])],
         [init("k", np.array([3], np.int64)), init("zero", np.array(0.0, np.float32))])


if __name__ == "__main__":
    main()
