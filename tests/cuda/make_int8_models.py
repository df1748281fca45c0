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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "int8"))
from attn_block import attention_block  # noqa: E402

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

# attn8: the transformer block of tests/int8/attn_block.py, for QAttention (kc_qattn.cuh)
attention_block(f"{out}/attn8.onnx", f"{out}/attn-data", rng, 16)
