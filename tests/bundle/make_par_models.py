#!/usr/bin/env python3
"""Writes the models of tests/bundle/test_parallel.sh: one of each kind of kernel that
NAME_run_parallel shares among workers (runtime/rt_par.h), each big enough to pass the
emitter's threshold: a conv net (packed GEMM convolutions, strided, Winograd, a residual, a Gemm), a
depthwise net (the channels-last depthwise kernel), a transformer block (projections on the
packed GEMM, fused attention over heads, a batched MatMul of two activations on rt_gemm) and
an LSTM (each step's gate products split by units) followed by a product, and a net of the
row and elementwise splits (LayerNormalization by rows, float Add/Sub/Mul/Div maps).

usage: make_par_models.py OUT_DIR
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

SEED = 1415
OPSET = 17
IR_VERSION = 8
F32 = TensorProto.FLOAT


def const(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.array(values, dtype=dtype), name)


def save(nodes, inits, x_shape, outs, path):
    g = helper.make_graph(nodes, path.stem, [helper.make_tensor_value_info("x", F32, x_shape)],
                          [helper.make_tensor_value_info(n, F32, s) for n, s in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = IR_VERSION
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, str(path))


def convnet(rng, path):
    """3x3 + Relu, 3x3 max pool, strided 3x3, 3x3 on Winograd (48 channels, 15x13), 1x1 +
    residual + Relu, global pool, Gemm."""
    inits = [weight(rng, "k1", (32, 3, 3, 3)), weight(rng, "c1", (32,)),
             weight(rng, "k2", (48, 32, 3, 3)), weight(rng, "c2", (48,)),
             weight(rng, "kw", (48, 48, 3, 3)), weight(rng, "cw", (48,)),
             weight(rng, "k3", (48, 48, 1, 1)), weight(rng, "c3", (48,)),
             weight(rng, "w4", (10, 48)), weight(rng, "b4", (10,))]
    nodes = [helper.make_node("Conv", ["x", "k1", "c1"], ["v1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["v1"], ["r0"]),
             helper.make_node("MaxPool", ["r0"], ["r1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["r1", "k2", "c2"], ["v2"], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["v2", "kw", "cw"], ["vw"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["vw", "k3", "c3"], ["v3"]),
             helper.make_node("Add", ["v3", "vw"], ["s3"]),
             helper.make_node("Relu", ["s3"], ["r3"]),
             helper.make_node("GlobalAveragePool", ["r3"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "w4", "b4"], ["y"], transB=1)]
    save(nodes, inits, [2, 3, 30, 26], [("y", [2, 10]), ("r3", [2, 48, 15, 13])], path)


def dwnet(rng, path):
    """1x1 expansion + Clip (ReLU6), depthwise 3x3, strided depthwise 5x5, 1x1 projection."""
    inits = [weight(rng, "k1", (40, 8, 1, 1)), weight(rng, "c1", (40,)),
             weight(rng, "k2", (40, 1, 3, 3)), weight(rng, "c2", (40,)),
             weight(rng, "k3", (40, 1, 5, 5)),
             weight(rng, "k4", (16, 40, 1, 1)),
             const("lo", 0.0, np.float32), const("hi", 6.0, np.float32)]
    nodes = [helper.make_node("Conv", ["x", "k1", "c1"], ["v1"]),
             helper.make_node("Clip", ["v1", "lo", "hi"], ["r1"]),
             helper.make_node("Conv", ["r1", "k2", "c2"], ["v2"], group=40, pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["v2", "k3"], ["v3"], group=40, strides=[2, 2],
                              pads=[2, 2, 2, 2]),
             helper.make_node("Conv", ["v3", "k4"], ["y"])]
    save(nodes, inits, [1, 8, 33, 29], [("y", [1, 16, 17, 15])], path)


def attention(rng, path):
    """Q, K, V projections, 4 heads of 16: softmax(Q K^T / 4 + mask) V, output projection,
    residual; and a batched product of two activations, h h^T."""
    S, E, H, D = 48, 64, 4, 16
    inits = [weight(rng, "wq", (E, E)), weight(rng, "wk", (E, E)), weight(rng, "wv", (E, E)),
             weight(rng, "wo", (E, E)), weight(rng, "bo", (E,)),
             const("heads", [1, S, H, D]), const("flat", [1, S, E]),
             const("scale", 4.0, np.float32),
             numpy_helper.from_array(
                 (np.triu(np.ones((S, S)), 1) * -1e4).astype(np.float32), "mask")]
    nodes = []
    for n in ("q", "k", "v"):
        nodes += [helper.make_node("MatMul", ["x", "w" + n], [n + "p"]),
                  helper.make_node("Reshape", [n + "p", "heads"], [n + "h"])]
    nodes += [helper.make_node("Transpose", ["qh"], ["qt"], perm=[0, 2, 1, 3]),
              helper.make_node("Transpose", ["kh"], ["kt"], perm=[0, 2, 3, 1]),
              helper.make_node("Transpose", ["vh"], ["vt"], perm=[0, 2, 1, 3]),
              helper.make_node("MatMul", ["qt", "kt"], ["sc"]),
              helper.make_node("Div", ["sc", "scale"], ["ss"]),
              helper.make_node("Add", ["ss", "mask"], ["sm"]),
              helper.make_node("Softmax", ["sm"], ["pr"], axis=-1),
              helper.make_node("MatMul", ["pr", "vt"], ["ctx"]),
              helper.make_node("Transpose", ["ctx"], ["ct"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ct", "flat"], ["cf"]),
              helper.make_node("MatMul", ["cf", "wo"], ["o"]),
              helper.make_node("Add", ["o", "bo"], ["ob"]),
              helper.make_node("Add", ["ob", "x"], ["y"]),
              helper.make_node("Transpose", ["y"], ["yt"], perm=[0, 2, 1]),
              helper.make_node("MatMul", ["y", "yt"], ["gram"])]
    save(nodes, inits, [1, S, E], [("y", [1, S, E]), ("gram", [1, S, S])], path)


def lstm(rng, path):
    """A bidirectional LSTM over 12 steps (its gate products split by columns of units),
    then a product of its outputs."""
    T, B, I, Hd = 12, 2, 24, 128
    inits = [weight(rng, "W", (2, 4 * Hd, I)), weight(rng, "R", (2, 4 * Hd, Hd)),
             weight(rng, "B", (2, 8 * Hd)), weight(rng, "wp", (2 * Hd, 40)),
             const("flat", [T * B, 2 * Hd])]
    nodes = [helper.make_node("LSTM", ["x", "W", "R", "B"], ["Y", "Yh"], hidden_size=Hd,
                              direction="bidirectional"),
             helper.make_node("Transpose", ["Y"], ["Yt"], perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["Yt", "flat"], ["f"]),
             helper.make_node("MatMul", ["f", "wp"], ["y"])]
    save(nodes, inits, [T, B, I], [("y", [T * B, 40]), ("Yh", [2, B, Hd])], path)


def eltnorm(rng, path):
    """The splits of LayerNormalization (rows of 47: the vector paths' tails) and of float
    binary maps of 32 Ki elements and more: a squeeze-excitation scale (a 1x1 convolution's
    channels-last output times a per-channel value from a pooled branch, EfficientNet's Mul),
    a vector along the rows, a column of per-row values, same shapes (one merged loop). Every
    map is a graph output, so that no elementwise chain fuses them."""
    C, H, W = 24, 61, 47
    inits = [weight(rng, "k1", (C, C, 1, 1)), weight(rng, "c1", (C,)),
             weight(rng, "k2", (C, C, 1, 1)), weight(rng, "c2", (C,)),
             weight(rng, "g", (W,)), weight(rng, "b", (W,)),
             numpy_helper.from_array(rng.uniform(0.5, 2.0, W).astype(np.float32), "dv"),
             weight(rng, "col", (C * H, 1)), const("rows", [C * H, W])]
    nodes = [helper.make_node("Conv", ["x", "k1", "c1"], ["v1"]),
             helper.make_node("GlobalAveragePool", ["v1"], ["p"]),
             helper.make_node("Conv", ["p", "k2", "c2"], ["s"]),
             helper.make_node("Mul", ["s", "v1"], ["se"]),
             helper.make_node("Reshape", ["x", "rows"], ["r"]),
             helper.make_node("LayerNormalization", ["r", "g", "b"], ["ln"], axis=-1),
             helper.make_node("Div", ["ln", "dv"], ["dn"]),
             helper.make_node("Mul", ["ln", "col"], ["cm"]),
             helper.make_node("Sub", ["ln", "r"], ["df"]),
             helper.make_node("Add", ["ln", "r"], ["sm"])]
    save(nodes, inits, [1, C, H, W],
         [("se", [1, C, H, W]), ("ln", [C * H, W]), ("dn", [C * H, W]), ("cm", [C * H, W]),
          ("df", [C * H, W]), ("sm", [C * H, W])], path)


def bottleneck_model(rng, path):
    """A ResNet first bottleneck block of stride 2 (its conv3 and downsample one product on
    the C target, rt_pconv2_nhwc_par_f32), then one of stride 1 (48 -> 64 beside 16 -> 64)."""
    inits, nodes, x = [], [], "x"
    for tag, cin, mid, cout, s in (("a", 32, 16, 48, 2), ("b", 48, 16, 64, 1)):
        x = bottleneck(rng, x, cin, mid, cout, s, tag, inits, nodes)
    nodes += [helper.make_node("Identity", [x], ["y"])]
    save(nodes, inits, [1, 32, 36, 22], [("y", [1, 64, 18, 11])], path)


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    convnet(rng, out / "par_convnet.onnx")
    dwnet(rng, out / "par_dwnet.onnx")
    attention(rng, out / "par_attention.onnx")
    lstm(rng, out / "par_lstm.onnx")
    eltnorm(rng, out / "par_eltnorm.onnx")
    bottleneck_model(rng, out / "par_bottleneck.onnx")


if __name__ == "__main__":
    main()
