#!/usr/bin/env python3
"""Writes the models of tests/bundle/test_packed.sh: products and convolutions that the C
target runs on the packed fp32 GEMM (runtime/rt_pgemm.h, weights packed by backend/plan.c),
with the shapes that stress it (rows, columns and reductions that are not multiples of the
tile, groups, strides, dilations, padding, a residual, kernels of many taps) and one of each
kind that must stay on the plain kernels (a Gemm whose C is a full matrix, a depthwise convolution).

usage: make_packed_models.py OUT_DIR
"""
import os
import pathlib
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import kiln_venv  # noqa: E402 (scripts/kiln_venv.py: a plain python3 restarts under the venv)
kiln_venv.use_venv(('numpy', 'onnx'))
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx_blocks import bottleneck, weight

SEED = 1414
OPSET = 17
IR_VERSION = 8
F32 = TensorProto.FLOAT


def save(nodes, inits, x_shape, y_name, y_shape, path):
    g = helper.make_graph(nodes, path.stem, [helper.make_tensor_value_info("x", F32, x_shape)],
                          [helper.make_tensor_value_info(y_name, F32, y_shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = IR_VERSION
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, str(path))


def products(rng, path):
    """MatMul over a batched A, + bias + Relu (FusedMatMul), Gemm transB with a bias, Gemm
    without C, Gemm with a full C (stays on rt_gemm)."""
    inits = [weight(rng, "w1", (37, 50)), weight(rng, "b1", (50,)),
             weight(rng, "w2", (20, 50)), weight(rng, "b2", (20,)),
             weight(rng, "w3", (20, 7)), weight(rng, "w4", (7, 17)), weight(rng, "c4", (10, 17)),
             numpy_helper.from_array(np.array([10, 50], dtype=np.int64), "shape")]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"]),
             helper.make_node("Add", ["m1", "b1"], ["a1"]),
             helper.make_node("Relu", ["a1"], ["r1"]),
             helper.make_node("Reshape", ["r1", "shape"], ["f1"]),
             helper.make_node("Gemm", ["f1", "w2", "b2"], ["g2"], transB=1),
             helper.make_node("Gemm", ["g2", "w3"], ["g3"]),
             helper.make_node("Gemm", ["g3", "w4", "c4"], ["y"])]
    save(nodes, inits, [2, 5, 37], "y", [10, 17], path)


def convs(rng, path):
    """A channels-last chain: 3x3 padded + Relu, grouped 1x1, strided dilated 3x3, a
    depthwise 3x3 (its own kernel), 1x1 with a residual Add and Relu."""
    inits = [weight(rng, "k1", (20, 6, 3, 3)), weight(rng, "c1", (20,)),
             weight(rng, "k2", (18, 10, 1, 1)),
             weight(rng, "k3", (33, 18, 3, 3)), weight(rng, "c3", (33,)),
             weight(rng, "k4", (33, 1, 3, 3)),
             weight(rng, "k5", (33, 33, 1, 1)), weight(rng, "c5", (33,))]
    nodes = [helper.make_node("Conv", ["x", "k1", "c1"], ["v1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["v1"], ["r1"]),
             helper.make_node("Conv", ["r1", "k2"], ["v2"], group=2),
             helper.make_node("Conv", ["v2", "k3", "c3"], ["v3"], strides=[2, 2],
                              dilations=[2, 1], pads=[2, 1, 1, 0]),
             helper.make_node("Conv", ["v3", "k4"], ["v4"], group=33, pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["v4", "k5", "c5"], ["v5"]),
             helper.make_node("Add", ["v5", "v3"], ["s5"]),
             helper.make_node("Relu", ["s5"], ["y"])]
    save(nodes, inits, [1, 6, 13, 11], "y", [1, 33, 6, 5], path)


def wino_convs(rng, path):
    """3x3 stride-1 convolutions that the C target runs on Winograd F(4x4, 3x3)
    (runtime/rt_wino.h): output sides that are not multiples of 4, channels that are not
    multiples of 16, pads 1 and 0, bias + Relu, a residual Add + Relu; then a strided 3x3
    that stays on the packed GEMM."""
    inits = [weight(rng, "k1", (48, 32, 3, 3)), weight(rng, "c1", (48,)),
             weight(rng, "k2", (48, 48, 3, 3)), weight(rng, "c2", (48,)),
             weight(rng, "k3", (33, 48, 3, 3)),
             weight(rng, "k4", (40, 33, 3, 3)), weight(rng, "c4", (40,))]
    nodes = [helper.make_node("Conv", ["x", "k1", "c1"], ["v1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["v1"], ["r1"]),
             helper.make_node("Conv", ["r1", "k2", "c2"], ["v2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["v2", "r1"], ["s2"]),
             helper.make_node("Relu", ["s2"], ["r2"]),
             helper.make_node("Conv", ["r2", "k3"], ["v3"]),
             helper.make_node("Conv", ["v3", "k4", "c4"], ["y"], strides=[2, 2],
                              pads=[1, 1, 1, 1])]
    save(nodes, inits, [1, 32, 13, 11], "y", [1, 40, 6, 5], path)


def stem_convs(rng, path):
    """Kernels of more taps than the packed GEMM's indirection table (64): a ViT-style patch
    stem (16x16/16 of 3 channels, bias, Relu), read by kernel rows, then a padded 9x9 of 40
    channels (81 taps, reduction blocks of fewer)."""
    inits = [weight(rng, "k1", (40, 3, 16, 16)), weight(rng, "c1", (40,)),
             weight(rng, "k2", (24, 40, 9, 9))]
    nodes = [helper.make_node("Conv", ["x", "k1", "c1"], ["v1"], kernel_shape=[16, 16],
                              strides=[16, 16]),
             helper.make_node("Relu", ["v1"], ["r1"]),
             helper.make_node("Conv", ["r1", "k2"], ["y"], pads=[4, 4, 4, 4])]
    save(nodes, inits, [1, 3, 48, 80], "y", [1, 24, 3, 5], path)


def bottlenecks(rng, path):
    """ResNet's first bottleneck blocks, whose conv3 and downsample the C target runs as one
    product (backend/plan.c, rt_pconv2_nhwc): a stride-1 downsample (32 -> 48 beside conv3's
    16 -> 48), a stride-2 one on even sides (48 -> 80 beside 32 -> 80: 80 columns, a partial
    tile); and one that stays two products and an Add: a stride-2 downsample whose input's
    sides are odd (5x7 -> 3x4) and channels of greatest common divisor 8 (24 and 80)."""
    inits, nodes = [], []
    a = bottleneck(rng, "x", 32, 16, 48, 1, "a", inits, nodes)
    b = bottleneck(rng, a, 48, 32, 80, 2, "b", inits, nodes)
    c = bottleneck(rng, b, 80, 24, 40, 2, "c", inits, nodes)
    nodes += [helper.make_node("Identity", [c], ["y"])]
    save(nodes, inits, [1, 32, 10, 14], "y", [1, 40, 3, 4], path)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    products(rng, out / "packed_products.onnx")
    convs(rng, out / "packed_convs.onnx")
    wino_convs(rng, out / "wino_convs.onnx")
    stem_convs(rng, out / "stem_convs.onnx")
    bottlenecks(rng, out / "bottlenecks.onnx")


if __name__ == "__main__":
    main()
