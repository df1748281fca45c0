"""Writes the small generated models of the CUDA backend's tests into a folder:
cuda_eltwise (broadcasting arithmetic, activations, Where, Cast, Clip, Max), cuda_cnn
(Conv with groups, depthwise Conv, BatchNormalization, pools, Gemm, Softmax) and
cuda_attn (batched MatMul, LayerNormalization, Gelu, Transpose, Concat, Slice, Gather,
Expand, Reshape, LogSoftmax) and cuda_generic (ops without a CUDA kernel, which run the C
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
