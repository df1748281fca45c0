"""Writes the small models of the kiln validate tests into a folder (tests/validate/*.sh).

chain.onnx       x f32[4,256], y f32[256] -> Add, Mul, Relu, Sigmoid, Tanh, Sub ->
                 out f32[4,256]; and Cast(Relu * 10) -> count i32[4,256]. The first three
                 nodes are exact in IEEE single precision; Sigmoid is the first that is not.
classifier.onnx  x f32[3,20] -> MatMul, Add, Softmax -> probs f32[3,12] (class scores)
gather.onnx      idx i64[6] -> Gather(table f32[8,3]) -> rows f32[6,3] (integer input)
usage: make_models.py DIR
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
SEED = 7  # the weights only need to be reproducible


def save(model, path):
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


def chain():
    c = numpy_helper.from_array(np.float32([1.5]), "c")
    ten = numpy_helper.from_array(np.float32([10.0]), "ten")
    nodes = [
        helper.make_node("Add", ["x", "y"], ["a"], name="add"),
        helper.make_node("Mul", ["a", "c"], ["b"], name="mul"),
        helper.make_node("Relu", ["b"], ["r"], name="relu"),
        helper.make_node("Sigmoid", ["r"], ["s"], name="sigmoid"),
        helper.make_node("Tanh", ["s"], ["t"], name="tanh"),
        helper.make_node("Sub", ["t", "x"], ["out"], name="sub"),
        helper.make_node("Mul", ["r", "ten"], ["r10"], name="scale"),
        helper.make_node("Cast", ["r10"], ["count"], to=TensorProto.INT32, name="cast"),
    ]
    g = helper.make_graph(
        nodes, "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 256]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [256])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [4, 256]),
         helper.make_tensor_value_info("count", TensorProto.INT32, [4, 256])],
        [c, ten])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8)


def classifier(rng):
    w = numpy_helper.from_array(rng.normal(0, 0.5, (20, 12)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.normal(0, 0.1, (12,)).astype(np.float32), "b")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["mm"], name="matmul"),
        helper.make_node("Add", ["mm", "b"], ["logits"], name="bias"),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1, name="softmax"),
    ]
    g = helper.make_graph(
        nodes, "classifier",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 20])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 12])], [w, b])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8)


def gather(rng):
    table = numpy_helper.from_array(rng.normal(0, 1, (8, 3)).astype(np.float32), "table")
    nodes = [helper.make_node("Gather", ["table", "idx"], ["rows"], axis=0, name="gather")]
    g = helper.make_graph(
        nodes, "gather",
        [helper.make_tensor_value_info("idx", TensorProto.INT64, [6])],
        [helper.make_tensor_value_info("rows", TensorProto.FLOAT, [6, 3])], [table])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8)


def main():
    out = sys.argv[1]
    rng = np.random.default_rng(SEED)
    save(chain(), out + "/chain.onnx")
    save(classifier(rng), out + "/classifier.onnx")
    save(gather(rng), out + "/gather.onnx")


if __name__ == "__main__":
    main()
