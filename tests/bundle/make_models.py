#!/usr/bin/env python3
"""Writes the small ONNX models that the bundle tests (tests/bundle/*.sh) compile with kiln.

Each model exercises one property of the C bundle, not one op: intermediates that the memory
plan must place (a chain, a diamond, a value used late), weights, a broadcast, several
outputs, integer casts. Weights come from a seeded generator, so a run writes the same bytes
every time. Only ops that the C backend has now are used; optional models that need ops from
other families (Conv, Gather) are written too, and the scripts skip or fail on them as they say.

usage: make_models.py OUT_DIR
"""
import pathlib
import sys

import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import kiln_venv  # noqa: E402 (scripts/kiln_venv.py: a plain python3 restarts under the venv)
kiln_venv.use_venv(('numpy', 'onnx'))
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 7031          # any fixed value: the weights only need to be reproducible
OPSET = 17
IR_VERSION = 8       # what onnx writes for opset 17; ONNX Runtime reads it

F32 = TensorProto.FLOAT


def weight(rng, name, shape):
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


def save(model, path):
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))


def eltwise_model(rng):
    """A chain with a diamond and a value used late, a broadcast weight, two outputs (one
    of them an intermediate that a later node also reads) and a cast to int32."""
    x = helper.make_tensor_value_info("x", F32, [2, 3, 8])
    y = helper.make_tensor_value_info("y", F32, [3, 8])
    w = weight(rng, "w", [8])
    nodes = [
        helper.make_node("Add", ["x", "y"], ["s"], name="add_xy"),
        helper.make_node("Relu", ["s"], ["r"], name="relu"),
        helper.make_node("Mul", ["r", "w"], ["m"], name="scale"),          # diamond top
        helper.make_node("Sigmoid", ["m"], ["left"], name="left"),
        helper.make_node("Neg", ["m"], ["right"], name="right"),
        helper.make_node("Add", ["left", "right"], ["joined"], name="join"),
        helper.make_node("Mul", ["joined", "joined"], ["sq"], name="square"),
        helper.make_node("Sub", ["sq", "s"], ["late"], name="use_s_late"),  # s used late
        helper.make_node("Tanh", ["late"], ["out_f"], name="tanh"),
        helper.make_node("Cast", ["joined"], ["as_int"], name="cast", to=TensorProto.INT32),
        helper.make_node("Abs", ["as_int"], ["out_i"], name="abs"),
    ]
    outs = [helper.make_tensor_value_info("out_f", F32, [2, 3, 8]),
            helper.make_tensor_value_info("out_i", TensorProto.INT32, [2, 3, 8]),
            helper.make_tensor_value_info("m", F32, [2, 3, 8])]
    g = helper.make_graph(nodes, "eltwise", [x, y], outs, [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                             producer_name="kiln tests/bundle/make_models.py")


def other_model(rng):
    """A different model for the two-bundles-in-one-program test: same input name as
    eltwise ("x") and its own weights."""
    x = helper.make_tensor_value_info("x", F32, [4, 5])
    b = weight(rng, "b", [5])
    c = weight(rng, "c", [4, 1])
    nodes = [
        helper.make_node("Mul", ["x", "b"], ["t0"], name="mul_b"),
        helper.make_node("Add", ["t0", "c"], ["t1"], name="add_c"),
        helper.make_node("Exp", ["t1"], ["t2"], name="exp"),
        helper.make_node("Sqrt", ["t2"], ["t3"], name="sqrt"),
        helper.make_node("Max", ["t3", "x"], ["y"], name="max"),
    ]
    outs = [helper.make_tensor_value_info("y", F32, [4, 5])]
    g = helper.make_graph(nodes, "other", [x], outs, [b, c])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                             producer_name="kiln tests/bundle/make_models.py")


def gather_model(rng):
    """Gather with its indices as a graph input: out-of-range indices come from the caller."""
    idx = helper.make_tensor_value_info("idx", TensorProto.INT64, [4])
    table = weight(rng, "table", [5, 3])
    nodes = [helper.make_node("Gather", ["table", "idx"], ["rows"], name="gather", axis=0),
             helper.make_node("Relu", ["rows"], ["out"], name="relu")]
    outs = [helper.make_tensor_value_info("out", F32, [4, 3])]
    g = helper.make_graph(nodes, "gather", [idx], outs, [table])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                             producer_name="kiln tests/bundle/make_models.py")


def conv_model(rng):
    """Conv + Relu + MaxPool: a bundle that pulls in runtime files."""
    x = helper.make_tensor_value_info("img", F32, [1, 2, 6, 6])
    k = weight(rng, "k", [3, 2, 3, 3])
    kb = weight(rng, "kb", [3])
    nodes = [helper.make_node("Conv", ["img", "k", "kb"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2],
                              strides=[2, 2])]
    outs = [helper.make_tensor_value_info("p", F32, [1, 3, 3, 3])]
    g = helper.make_graph(nodes, "conv", [x], outs, [k, kb])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                             producer_name="kiln tests/bundle/make_models.py")


def minimal_model(rng):
    """One node, no weights, no intermediates: an empty arena and an empty weights blob."""
    del rng
    x = helper.make_tensor_value_info("x", F32, [3, 7])
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    outs = [helper.make_tensor_value_info("y", F32, [3, 7])]
    g = helper.make_graph(nodes, "minimal", [x], outs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                             producer_name="kiln tests/bundle/make_models.py")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    save(eltwise_model(rng), out / "eltwise.onnx")
    save(other_model(rng), out / "other.onnx")
    save(gather_model(rng), out / "gather.onnx")
    save(conv_model(rng), out / "conv.onnx")
    save(minimal_model(rng), out / "minimal.onnx")


if __name__ == "__main__":
    main()
