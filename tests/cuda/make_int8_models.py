"""The small int8 models of tests/cuda/int8_bundles.sh: a float CNN for kiln calibrate (a
strided 3x3 convolution from 3 channels, a residual block, max pooling, a depthwise
convolution, a 1x1 convolution, global average pooling, Gemm: the ops of ResNet and
MobileNetV2), its calibration samples, and seeded test inputs; attn8, a transformer block
whose attention runs as QAttention, and its calibration samples.
usage: make_int8_models.py OUT"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(f"{out}/data", exist_ok=True)
rng = np.random.default_rng(29)
inits, nodes = [], []


def const(name, a):
    inits.append(numpy_helper.from_array(np.asarray(a, np.float32), name))
    return name


def conv(x, y, cin, cout, k, stride=1, group=1, relu=True):
    fan = cin // group * k * k
    wn = const(y + "_w", rng.standard_normal((cout, cin // group, k, k)) * (2.0 / fan) ** 0.5)
    bn = const(y + "_b", rng.standard_normal(cout) * 0.1)
    o = y + "_c" if relu else y
    nodes.append(helper.make_node("Conv", [x, wn, bn], [o], name=y + "_conv", kernel_shape=[k, k],
                                  pads=[k // 2] * 4, strides=[stride] * 2, group=group))
    if relu:
        nodes.append(helper.make_node("Relu", [o], [y], name=y + "_relu"))
    return y


# channel counts across the GPU kernel's cases: 3 (byte gather), 20 (4-byte), 32 and 80
# (16-byte), 70 output channels (a partial 64-column tile), 147 > 64 reduction bytes
conv("x", "c1", 3, 32, 7, stride=2)
conv("c1", "c2", 32, 32, 3)
conv("c2", "c3", 32, 32, 3, relu=False)
nodes.append(helper.make_node("Add", ["c3", "c1"], ["s"], name="res_add"))
nodes.append(helper.make_node("Relu", ["s"], ["r"], name="res_relu"))
nodes.append(helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[3, 3],
                              strides=[2, 2], pads=[1, 1, 1, 1]))
conv("p", "d", 32, 32, 3, group=32)
conv("d", "e", 32, 20, 1)
conv("e", "f", 20, 80, 3)
conv("f", "h", 80, 70, 1)
nodes.append(helper.make_node("GlobalAveragePool", ["h"], ["g"], name="gap"))
nodes.append(helper.make_node("Flatten", ["g"], ["fl"], name="flat"))
const("fc_w", rng.standard_normal((70, 10)) * 0.3)
const("fc_b", rng.standard_normal(10) * 0.1)
nodes.append(helper.make_node("Gemm", ["fl", "fc_w", "fc_b"], ["y"], name="fc"))
shape = [1, 3, 37, 29]
graph = helper.make_graph(nodes, "int8cnn",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.save(model, f"{out}/cnn8.onnx")
for i in range(16):
    np.save(f"{out}/data/s{i:03d}.npy", rng.standard_normal(shape).astype(np.float32))

# attn8: a transformer block for QAttention (kc_qattn.cuh): Q, K, V projections, 3 heads of
# 20 over 23 tokens (remainders of 16 and 4), a causal mask, the output projection
S, E, H = 23, 60, 3
D = E // H
inits, nodes = [], []


def mm(x, y, k, n):
    nodes.append(helper.make_node("MatMul", [x, const(y + "_w", rng.standard_normal((k, n)) / k ** 0.5)],
                                  [y], name=y))


inits.append(numpy_helper.from_array(np.array([1, S, H, D], np.int64), "heads"))
inits.append(numpy_helper.from_array(np.array([1, S, E], np.int64), "flat"))
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
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, S, 10])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.save(model, f"{out}/attn8.onnx")
os.makedirs(f"{out}/attn-data", exist_ok=True)
for i in range(16):
    np.save(f"{out}/attn-data/s{i:03d}.npy", rng.standard_normal((1, S, E)).astype(np.float32))
