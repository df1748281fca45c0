#!/usr/bin/env python3
"""Writes examples/models/tinycnn.onnx, the small CNN shipped with Kiln for demos and tests.

A classifier of 8x8 one-channel images (digits-like) into 10 classes, with a symbolic
batch dimension "batch" and seeded random weights (it is not trained; a later version
will be). The same onnx and numpy give the same bytes on every run.

usage: make_example_model.py [--output PATH]   (default: examples/models/tinycnn.onnx)
"""
import argparse
import pathlib

import kiln_venv  # noqa: E402 (scripts/kiln_venv.py: a plain python3 restarts under the venv)
kiln_venv.use_venv(('numpy', 'onnx'))
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 20240501          # any fixed value: the weights only need to be reproducible
OPSET = 17
IR_VERSION = 8           # the IR version onnx 1.12+ writes for opset 17; ONNX Runtime reads it
IMAGE = 8                # input height and width
CLASSES = 10
C1, C2 = 8, 16           # channels of the two convolutions


def weight(rng, name, shape):
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    data = rng.normal(0.0, 1.0 / np.sqrt(fan_in), size=shape).astype(np.float32)
    return numpy_helper.from_array(data, name)


def build():
    rng = np.random.default_rng(SEED)
    inits = [
        weight(rng, "conv1.w", (C1, 1, 3, 3)),
        weight(rng, "conv1.b", (C1,)),
        weight(rng, "conv2.w", (C2, C1, 3, 3)),
        weight(rng, "conv2.b", (C2,)),
        weight(rng, "fc.w", (CLASSES, C2)),
        weight(rng, "fc.b", (CLASSES,)),
    ]
    nodes = [
        helper.make_node("Conv", ["image", "conv1.w", "conv1.b"], ["conv1"], name="conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv1"], ["relu1"], name="relu1"),
        helper.make_node("MaxPool", ["relu1"], ["pool1"], name="pool1",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["pool1", "conv2.w", "conv2.b"], ["conv2"], name="conv2",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv2"], ["relu2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["relu2"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["features"], name="flatten", axis=1),
        helper.make_node("Gemm", ["features", "fc.w", "fc.b"], ["logits"], name="fc",
                         transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "tinycnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 1, IMAGE, IMAGE])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", CLASSES])],
        initializer=inits)
    model = helper.make_model(graph, producer_name="kiln make_example_model.py",
                              producer_version="1", ir_version=IR_VERSION,
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.doc_string = "Kiln example: a small CNN for 1x8x8 digit-like images (untrained)."
    onnx.checker.check_model(model, full_check=True)
    return model


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", type=pathlib.Path,
                    default=root / "examples" / "models" / "tinycnn.onnx")
    args = ap.parse_args()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_bytes(build().SerializeToString(deterministic=True))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
