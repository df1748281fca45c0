#!/usr/bin/env python3
"""Pre-quantized models against ONNX Runtime (issue 13 item 3; tests/bundle/test_int8_prequant.sh).

  prequant.py quantize FLOAT.onnx OUT.onnx qdq|qop [u8|s8]
      onnxruntime.quantization.quantize_static, per-channel int8 weights, activations uint8
      (u8, default) or int8 (s8), calibrated on 8 seeded uniform [0,1) inputs; prints the
      op counts of the result.
  prequant.py compare MODEL.onnx EXE WEIGHTS N [--min-within F] [--min-top1 F] [--min-cos F]
                      [--ref-model QDQ.onnx]
      N seeded uniform [0,1) inputs through the bundle's test main EXE and through ONNX
      Runtime on the same quantized MODEL, twice: its int8 kernels, and the QDQ semantics
      (graph optimizations off; --ref-model: the QDQ twin of a QOperator model); prints the
      share of output elements within one quantization step (the scale of the last
      QuantizeLinear/QLinear op before the output) and within two, top-1 agreement and the
      least cosine; fails when the agreement with the QDQ semantics is below --min-within
      (1 step, default 0.95), --min-top1 (0.95) or --min-cos (0.99). Deep networks drift by
      more than a step per element (rounding differences at each layer add up; ONNX
      Runtime's own int8 kernels drift further), so they are held by cosine and top-1.
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import kiln_venv  # noqa: E402
kiln_venv.use_venv(('numpy', 'onnx', 'onnxruntime'))
import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

SEED = 20261125


def inputs_of(m):
    inits = {t.name for t in m.graph.initializer}
    return [(i.name, [d.dim_value if d.dim_value > 0 else 1 for d in i.type.tensor_type.shape.dim])
            for i in m.graph.input if i.name not in inits]


def quantize(src, dst, fmt, act):
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)
    m = onnx.load(src)
    ins = inputs_of(m)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.rng = np.random.default_rng(SEED)
            self.left = 8

        def get_next(self):
            if not self.left:
                return None
            self.left -= 1
            return {n: self.rng.uniform(0, 1, s).astype(np.float32) for n, s in ins}

    quantize_static(src, dst, Reader(),
                    quant_format=QuantFormat.QDQ if fmt == "qdq" else QuantFormat.QOperator,
                    per_channel=True, weight_type=QuantType.QInt8,
                    activation_type=QuantType.QUInt8 if act == "u8" else QuantType.QInt8)
    ops = {}
    for n in onnx.load(dst).graph.node:
        k = (n.domain + "." if n.domain else "") + n.op_type
        ops[k] = ops.get(k, 0) + 1
    print(f"{os.path.basename(dst)}: " + ", ".join(f"{k} x{v}" for k, v in sorted(ops.items())))


def output_step(m):
    """The scale of the quantized value the (first) output was dequantized or computed from."""
    init = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    for n in m.graph.node:  # PyTorch's exporter writes parameters as Constant nodes
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            init[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    prod = {o: n for n in m.graph.node for o in n.output}
    v, seen = m.graph.output[0].name, 0
    while v in prod and seen < 8:
        n = prod[v]
        seen += 1
        if n.op_type == "DequantizeLinear":
            return float(init[n.input[1]].reshape(-1)[0])
        if n.op_type in ("QuantizeLinear",):
            return float(init[n.input[1]].reshape(-1)[0])
        if n.op_type.startswith("QLinear") or n.op_type == "QGemm":
            k = {"QLinearConv": 6, "QLinearMatMul": 6, "QLinearAdd": 6, "QLinearMul": 6,
                 "QGemm": 7, "QLinearConcat": 0}.get(n.op_type, 3)
            return float(init[n.input[k]].reshape(-1)[0])
        v = n.input[0]
    return None


class Agreement:
    def __init__(self, what):
        self.what = what
        self.within1 = self.within2 = self.total = self.top1 = self.n = 0
        self.worst = 0.0
        self.cos = 1.0

    def add(self, got, ref, step):
        d = np.abs(got - ref) / step
        self.within1 += int((d <= 1.0 + 1e-3).sum())
        self.within2 += int((d <= 2.0 + 1e-3).sum())
        self.total += d.size
        self.worst = max(self.worst, float(d.max()))
        self.top1 += int(got.reshape(-1).argmax() == ref.reshape(-1).argmax())
        g, r = got.reshape(-1).astype(np.float64), ref.reshape(-1).astype(np.float64)
        den = np.linalg.norm(g) * np.linalg.norm(r)
        self.cos = min(self.cos, float(g @ r / den) if den > 0 else float(np.array_equal(g, r)))
        self.n += 1

    def line(self):
        return (f"{self.what}: within 1 step {100 * self.within1 / self.total:.2f}%, within 2 "
                f"{100 * self.within2 / self.total:.2f}%, worst {self.worst:.1f} steps, top-1 "
                f"{self.top1}/{self.n}, cosine >= {self.cos:.5f}")


def compare(model, exe, weights, n, min_within, min_top1, min_cos, ref_model):
    """Against ONNX Runtime's int8 kernels (default optimizations) and against the model's
    ONNX semantics: the QDQ model (ref_model for a QOperator one) with graph optimizations
    off, which runs DequantizeLinear -> float op -> QuantizeLinear as written. The checks
    use the second: ONNX Runtime's own int8 kernels stray from it on some models (digits:
    up to ~15 steps)."""
    import onnxruntime as ort
    ort.set_default_logger_severity(3)
    m = onnx.load(model)
    step = output_step(m)
    fast = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    o = ort.SessionOptions()
    o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    spec = ort.InferenceSession(ref_model or model, o, providers=["CPUExecutionProvider"])
    (name, shape), = inputs_of(m)
    rng = np.random.default_rng(SEED + 1)
    a_fast, a_spec = Agreement("vs ORT int8"), Agreement("vs QDQ semantics")
    with tempfile.TemporaryDirectory() as w:
        for _ in range(n):
            x = rng.uniform(0, 1, shape).astype(np.float32)
            x.tofile(f"{w}/in.bin")
            subprocess.run([exe, weights, f"{w}/in.bin", f"{w}/out.bin"], check=True)
            r_fast = fast.run(None, {name: x})[0].astype(np.float32)
            r_spec = spec.run(None, {name: x})[0].astype(np.float32)
            got = np.fromfile(f"{w}/out.bin", np.float32)[:r_fast.size].reshape(r_fast.shape)
            a_fast.add(got, r_fast, step)
            a_spec.add(got, r_spec, step)
    print(f"{os.path.basename(model)} (output step {step:.4g}, {n} inputs): {a_spec.line()}; "
          f"{a_fast.line()}")
    return (a_spec.within1 / a_spec.total >= min_within and a_spec.top1 / n >= min_top1 and
            a_spec.cos >= min_cos)


def main():
    a = sys.argv[1:]
    if a[:1] == ["quantize"] and len(a) in (4, 5):
        quantize(a[1], a[2], a[3], a[4] if len(a) == 5 else "u8")
        return 0
    if a[:1] == ["compare"] and len(a) >= 5:
        opts = {"--min-within": "0.95", "--min-top1": "0.95", "--min-cos": "0.99", "--ref-model": None}
        rest = a[5:]
        for i in range(0, len(rest), 2):
            opts[rest[i]] = rest[i + 1]
        ok = compare(a[1], a[2], a[3], int(a[4]), float(opts["--min-within"]),
                     float(opts["--min-top1"]), float(opts["--min-cos"]), opts["--ref-model"])
        return 0 if ok else 1
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
