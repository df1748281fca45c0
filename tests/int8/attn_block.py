"""The transformer block of the int8 attention tests (tests/bundle/test_int8.sh,
tests/cuda/int8_bundles.sh through make_int8_models.py): Q, K, V projections, 3 heads of 20
over 23 tokens (remainders of every block of the int8 attention: 16 and 4 keys, 16 of a head),
a causal mask, the output projection; QAttention replaces its attention under --int8."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def attention_block(path, data_dir, rng, samples):
    """Writes the model to path and `samples` calibration inputs (s000.npy, ...) to data_dir,
    drawing the weights and then the inputs from rng."""
    S, E, H = 23, 60, 3
    D = E // H
    inits, nodes = [], []

    def const(name, a, dt=np.float32):
        inits.append(numpy_helper.from_array(np.asarray(a, dt), name))
        return name

    def mm(x, y, k, n):
        w = const(y + "_w", rng.standard_normal((k, n)) / k ** 0.5)
        nodes.append(helper.make_node("MatMul", [x, w], [y], name=y))

    const("heads", [1, S, H, D], np.int64)
    const("flat", [1, S, E], np.int64)
    const("scale", np.float32(1.0 / D ** 0.5))
    const("causal", np.triu(np.full((S, S), -10000.0), 1).reshape(1, 1, S, S))
    for t in "qkv":
        mm("x", t, E, E)
        nodes.append(helper.make_node("Reshape", [t, "heads"], [t + "_h"], name=t + "_reshape"))
    nodes.append(helper.make_node("Transpose", ["q_h"], ["qt"], name="q_t", perm=[0, 2, 1, 3]))
    nodes.append(helper.make_node("Transpose", ["k_h"], ["kt"], name="k_t", perm=[0, 2, 3, 1]))
    nodes.append(helper.make_node("Transpose", ["v_h"], ["vt"], name="v_t", perm=[0, 2, 1, 3]))
    nodes.append(helper.make_node("MatMul", ["qt", "kt"], ["s"], name="qk"))
    nodes.append(helper.make_node("Mul", ["s", "scale"], ["ss"], name="scaled"))
    nodes.append(helper.make_node("Add", ["ss", "causal"], ["sm"], name="masked"))
    nodes.append(helper.make_node("Softmax", ["sm"], ["p"], name="softmax", axis=-1))
    nodes.append(helper.make_node("MatMul", ["p", "vt"], ["o"], name="pv"))
    nodes.append(helper.make_node("Transpose", ["o"], ["ot"], name="o_t", perm=[0, 2, 1, 3]))
    nodes.append(helper.make_node("Reshape", ["ot", "flat"], ["of"], name="o_reshape"))
    mm("of", "y", E, 10)
    graph = helper.make_graph(nodes, "int8attn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, S, E])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, S, 10])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    os.makedirs(data_dir, exist_ok=True)
    for i in range(samples):
        np.save(f"{data_dir}/s{i:03d}.npy", rng.standard_normal((1, S, E)).astype(np.float32))
