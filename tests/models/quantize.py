#!/usr/bin/env python3
"""Quantizes a float model of the suite to QDQ form with ONNX Runtime's static quantizer.

Run with the pinned venv python (it has onnxruntime). Calibration uses a few seeded random
inputs: the point is a model with real QuantizeLinear/DequantizeLinear pairs and int8
weights as ONNX Runtime's tooling writes them, not a model with good accuracy.

usage: quantize.py FLOAT.onnx OUT.onnx
"""
import sys

import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import kiln_venv  # noqa: E402 (scripts/kiln_venv.py: a plain python3 restarts under the venv)
kiln_venv.use_venv(('numpy', 'onnx', 'onnxruntime'))
import numpy as np
import onnx
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_static)

SEED = 20240611
CALIBRATION_SAMPLES = 8   # enough for min-max ranges on random data; keeps this step short


class RandomReader(CalibrationDataReader):
    def __init__(self, model_path):
        m = onnx.load(model_path, load_external_data=False)
        inits = {t.name for t in m.graph.initializer}
        self.inputs = [(i.name, [d.dim_value for d in i.type.tensor_type.shape.dim])
                       for i in m.graph.input if i.name not in inits]
        self.rng = np.random.default_rng(SEED)
        self.left = CALIBRATION_SAMPLES

    def get_next(self):
        if self.left == 0:
            return None
        self.left -= 1
        return {name: self.rng.standard_normal(shape).astype(np.float32)
                for name, shape in self.inputs}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, dst = sys.argv[1], sys.argv[2]
    # QDQ with uint8 activations and int8 per-tensor weights: ONNX Runtime's defaults for
    # CPU. per_channel stays off so the model uses only per-tensor scales.
    quantize_static(src, dst, RandomReader(src), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    per_channel=False)
    m = onnx.load(dst)
    ops = {}
    for n in m.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    print(f"quantized {src} -> {dst}: "
          + ", ".join(f"{k} {v}" for k, v in sorted(ops.items())))


if __name__ == "__main__":
    main()
