#!/usr/bin/env python3
"""Error of long reductions: Kiln's C bundle, the float32 one-value-at-a-time loop Kiln
used before runtime/rt_sum.h, and ONNX Runtime, each against a float64 reference (numpy).

The data is what a detector's feature maps hold: positive activations (a ReLU of a normal
draw, mean about 0.9), seeded. Each case is one small ONNX model built here; Kiln compiles
it (`kiln compile --test-main`), the system C compiler builds it at -O2, and it runs on the
same input as ONNX Runtime (CPU, graph optimizations off). "before" replays the old kernels'
arithmetic exactly: a float32 accumulator adding the values in order (np.add.accumulate in
float32), then the same final division or exp/log. Prints a markdown table of each case's
largest error over its outputs, relative to the outputs' scale.

usage: bench/accuracy/sums.py [--kiln build/kiln] [--cc cc] [--seed N]
"""
import os
import sys

if __name__ == "__main__":  # the pinned venv has numpy, onnx and onnxruntime
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "scripts"))
    import kiln_venv
    kiln_venv.use_venv()

import argparse
import pathlib
import subprocess
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

ROOT = pathlib.Path(__file__).resolve().parents[2]
OPSET = 17
F32 = TensorProto.FLOAT


def model_of(node, x_shape, y_shape, inits=()):
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", F32, x_shape)],
                          [helper.make_tensor_value_info("y", F32, y_shape)],
                          initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = 8
    return m


def seq_sum(v):
    """The old kernels' sum: float32, one value at a time, in order."""
    return np.add.accumulate(np.asarray(v, np.float32).ravel(), dtype=np.float32)[-1]


def cases(rng):
    """(name, model, input, float64 reference, old kernels' result)."""
    out = []
    x = np.maximum(rng.standard_normal((1, 16, 160, 160)) * 2 + 0.5, 0).astype(np.float32)
    flat = x.reshape(16, -1)
    ref = flat.astype(np.float64).mean(axis=1).reshape(1, 16, 1, 1)
    old = np.array([seq_sum(r) / np.float32(r.size) for r in flat], np.float32).reshape(ref.shape)
    out.append(("GlobalAveragePool 16x160x160",
                model_of(helper.make_node("GlobalAveragePool", ["x"], ["y"]), x.shape, ref.shape),
                x, ref, old))
    out.append(("ReduceMean (H,W) 16x160x160",
                model_of(helper.make_node("ReduceMean", ["x"], ["y"], axes=[2, 3]), x.shape,
                         ref.shape), x, ref, old))
    v = np.maximum(rng.standard_normal((1, 1000000)) * 2 + 0.5, 0).astype(np.float32)
    ref = v.astype(np.float64).sum(axis=1, keepdims=True)
    out.append(("ReduceSum 1e6", model_of(
        helper.make_node("ReduceSum", ["x", "axes"], ["y"]), v.shape, ref.shape,
        [helper.make_tensor("axes", TensorProto.INT64, [1], [1])]), v, ref,
        np.array([[seq_sum(v[0])]], np.float32)))
    ref = np.sqrt((v.astype(np.float64) ** 2).sum(axis=1, keepdims=True))
    out.append(("ReduceL2 1e6", model_of(
        helper.make_node("ReduceL2", ["x"], ["y"], axes=[1]), v.shape, ref.shape), v, ref,
        np.sqrt(np.array([[seq_sum(v[0].astype(np.float32) * v[0])]], np.float32))))
    s = rng.standard_normal((1, 100000)).astype(np.float32)
    e = np.exp(s.astype(np.float64) - s.max())
    ref = e / e.sum()
    e32 = np.exp(s - s.max()).astype(np.float32)
    out.append(("Softmax 1e5", model_of(helper.make_node("Softmax", ["x"], ["y"], axis=-1),
                                        s.shape, s.shape), s, ref, e32 / seq_sum(e32)))
    t = (np.maximum(rng.standard_normal((4, 100000)) * 2 + 0.5, 0) + 3).astype(np.float32)
    t64 = t.astype(np.float64)
    mu = t64.mean(axis=1, keepdims=True)
    ref = (t64 - mu) / np.sqrt(((t64 - mu) ** 2).mean(axis=1, keepdims=True) + 1e-5)
    old = []
    for r in t:
        m = seq_sum(r) / np.float32(r.size)
        d = r - m
        var = seq_sum(d * d) / np.float32(r.size)
        old.append(d * (np.float32(1) / np.sqrt(var + np.float32(1e-5))))
    ones = helper.make_tensor("scale", F32, [100000], [1.0] * 100000)
    out.append(("LayerNormalization 4x1e5 (mean 3.9)", model_of(
        helper.make_node("LayerNormalization", ["x", "scale"], ["y"], axis=-1, epsilon=1e-5),
        t.shape, t.shape, [ones]), t, ref, np.array(old, np.float32)))
    return out


def rel_err(got, ref):
    """max |got - ref| / max |ref|: the error in units of the output's scale (per element
    relative errors would be dominated by LayerNormalization's outputs near 0)."""
    got = np.asarray(got, np.float64).reshape(ref.shape)
    return float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))


def run_kiln(kiln, cc, model, x, work):
    work.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(work / "m.onnx"))
    subprocess.run([kiln, "compile", str(work / "m.onnx"), "-o", str(work / "b"), "--name",
                    "m", "--test-main"], check=True, stdout=subprocess.DEVNULL)
    exe = work / "m_test"
    subprocess.run([cc, "-O2", "-std=c99", "-o", str(exe), str(work / "b" / "m.c"),
                    str(work / "b" / "m_test_main.c"), "-lm"], check=True)
    x.astype("<f4").tofile(work / "in.bin")
    subprocess.run([str(exe), str(work / "b" / "m_weights.bin"), str(work / "in.bin"),
                    str(work / "out.bin")], check=True)
    return np.fromfile(work / "out.bin", "<f4")


def run_ort(model, x):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, {"x": x})[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kiln", default=str(ROOT / "build" / "kiln"))
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--seed", type=int, default=20240611)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    print("| reduction | before (float32, in order) | Kiln now | ONNX Runtime %s | before / now "
          "|" % ort.__version__)
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for k, (name, model, x, ref, old) in enumerate(cases(rng)):
            now = run_kiln(a.kiln, a.cc, model, x, pathlib.Path(tmp) / str(k)).reshape(ref.shape)
            e_old, e_now, e_ort = rel_err(old, ref), rel_err(now, ref), rel_err(run_ort(model, x), ref)
            print("| %s | %.2e | %.2e | %.2e | %.0fx |" % (name, e_old, e_now, e_ort,
                                                           e_old / max(e_now, 1e-30)))
    print("\nerror: max |out - ref| / max |ref| over the outputs, ref in float64 (numpy); "
          "seed %d" % a.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
