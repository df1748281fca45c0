#!/usr/bin/env python3
"""Models and checks of tests/bundle/test_counts.sh: outputs of data-dependent size.

  counts.py models DIR     writes nonzero.onnx, unique.onnx, compress.onnx, nms.onnx (the op's
                           outputs are graph outputs, their counted sizes symbols, so kiln
                           compiles the upper bound) and nonzero_inside.onnx (NonZero read by a
                           Transpose inside the graph)
  counts.py check --exe PROG --weights W --model M.onnx --work DIR [--full]
                           draws inputs whose counts fall below the bound (--full: reach it),
                           runs PROG (a NAME_test_main program), and checks each output against
                           ONNX Runtime: the count PROG prints ("FIELD_count N") equals the
                           reference's size along the counted axis, the entries before it match,
                           the entries past it hold the fill (-1 for indices, 0 for data/counts)
  counts.py status --exe PROG --weights W --model M.onnx --work DIR --want CODE [--full]
                           the run must fail with NAME_run status CODE
"""
import argparse
import os
import pathlib
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import kiln_venv  # noqa: E402 (scripts/kiln_venv.py: a plain python3 restarts under the venv)
kiln_venv.use_venv(('numpy', 'onnx', 'onnxruntime'))
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

OPSET = 17
# model -> [(output name, counted axis or None when the output has a fixed size, fill)]
OUTPUTS = {
    "nonzero": [("y", 1, -1)],
    "unique": [("u", 0, 0), ("idx", 0, -1), ("inv", None, None), ("cnt", 0, 0)],
    "compress": [("y", 0, 0)],
    "nms": [("sel", 0, -1)],
    "nonzero_inside": [("z", None, None)],
}


def out_vi(name, elem, shape):
    """An output whose counted size is a symbol, as exporters write it: kiln picks the bound."""
    return helper.make_tensor_value_info(name, elem, shape)


def save(d, name, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(d, name + ".onnx"))


def make_models(d):
    os.makedirs(d, exist_ok=True)
    F, I, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
    x34 = helper.make_tensor_value_info("x", F, [3, 4])
    save(d, "nonzero", [helper.make_node("NonZero", ["x"], ["y"])], [x34], [out_vi("y", I, [2, "n"])])
    save(d, "unique", [helper.make_node("Unique", ["x"], ["u", "idx", "inv", "cnt"], sorted=1)],
         [helper.make_tensor_value_info("x", F, [8])],
         [out_vi("u", F, ["n"]), out_vi("idx", I, ["n"]), out_vi("inv", I, [8]),
          out_vi("cnt", I, ["n"])])
    save(d, "compress", [helper.make_node("Compress", ["x", "c"], ["y"], axis=0)],
         [helper.make_tensor_value_info("x", F, [4, 3]), helper.make_tensor_value_info("c", B, [4])],
         [out_vi("y", F, ["n", 3])])
    save(d, "nms", [helper.make_node("NonMaxSuppression", ["boxes", "scores", "max", "iou",
                                                           "thr"], ["sel"])],
         [helper.make_tensor_value_info("boxes", F, [1, 6, 4]),
          helper.make_tensor_value_info("scores", F, [1, 2, 6])], [out_vi("sel", I, ["n", 3])],
         [helper.make_tensor("max", I, [1], [3]), helper.make_tensor("iou", F, [1], [0.3]),
          helper.make_tensor("thr", F, [1], [0.45])])
    save(d, "nonzero_inside", [helper.make_node("NonZero", ["x"], ["y"]),
                               helper.make_node("Transpose", ["y"], ["z"])],
         [x34], [out_vi("z", I, ["n", 2])])


def draw(model, rng, full):
    """Inputs of the model whose counts fall below the bound (or reach it with full)."""
    if model in ("nonzero", "nonzero_inside"):
        x = rng.standard_normal((3, 4)).astype(np.float32) + 5
        if not full:
            x[rng.random((3, 4)) < 0.4] = 0
            x[rng.integers(0, 3), rng.integers(0, 4)] = 0
        return [x]
    if model == "unique":
        if full:
            return [rng.permutation(8).astype(np.float32) - 3]
        x = rng.integers(-2, 3, 8).astype(np.float32)
        x[1] = x[0]
        return [x]
    if model == "compress":
        c = rng.random(4) < 0.5
        c[rng.integers(0, 4)] = False
        return [rng.standard_normal((4, 3)).astype(np.float32), np.ones(4, bool) if full else c]
    corners = rng.random((1, 6, 2)).astype(np.float32) * 4
    boxes = np.concatenate([corners, corners + 0.5 + rng.random((1, 6, 2)).astype(np.float32)], 2)
    scores = rng.random((1, 2, 6)).astype(np.float32) * 0.4
    scores[0, 0] += 0.5  # class 1 stays under the score threshold: at most 3 of the bound 6
    return [boxes, scores]


def run(a, inputs):
    work = pathlib.Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    files = []
    for k, t in enumerate(inputs):
        files.append(str(work / ("in%d.bin" % k)))
        pathlib.Path(files[-1]).write_bytes(np.ascontiguousarray(t).tobytes())
    m = onnx.load(a.model)
    outs = [str(work / ("out%d.bin" % k)) for k in range(len(m.graph.output))]
    p = subprocess.run([a.exe, a.weights] + files + outs, capture_output=True, text=True)
    return p, outs


def check(a):
    name = pathlib.Path(a.model).stem
    seed = int.from_bytes(os.urandom(4), "little")
    rng = np.random.default_rng(seed)
    inputs = draw(name, rng, a.full)
    p, outs = run(a, inputs)
    if p.returncode != 0:
        sys.exit("seed %d: exit %d: %s" % (seed, p.returncode, p.stderr.strip()))
    counts = dict((f, int(n)) for f, n in re.findall(r"^(\w+)_count (-?\d+)$", p.stdout, re.M))
    sess = ort.InferenceSession(a.model, providers=["CPUExecutionProvider"])
    feeds = dict((i.name, t) for i, t in zip(sess.get_inputs(), inputs))
    refs = sess.run(None, feeds)
    sizes = []
    for (out, axis, fill), ref, path in zip(OUTPUTS[name], refs, outs):
        got = np.frombuffer(pathlib.Path(path).read_bytes(), dtype=ref.dtype)
        if axis is None:
            if got.size != ref.size or (got != ref.ravel()).any():
                sys.exit("seed %d: %s: %s, expected %s" % (seed, out, got, ref.ravel()))
            continue
        shape = list(ref.shape)
        bound = got.size // int(np.prod([s for i, s in enumerate(shape) if i != axis]))
        shape[axis] = bound
        got = got.reshape(shape)
        n = ref.shape[axis]
        if counts.get(out) != n:
            sys.exit("seed %d: %s_count %s, expected %d (stdout: %r)" % (
                seed, out, counts.get(out), n, p.stdout))
        head = np.take(got, range(n), axis=axis)
        tail = np.take(got, range(n, bound), axis=axis)
        if (head != ref).any():
            sys.exit("seed %d: %s: first %d entries %s, expected %s" % (seed, out, n, head, ref))
        if (tail != fill).any():
            sys.exit("seed %d: %s: entries past the count %s, expected all %s" % (
                seed, out, tail, fill))
        if not a.full and n >= bound:
            sys.exit("seed %d: %s: the count %d did not fall below the bound %d" % (
                seed, out, n, bound))
        sizes.append("%s %d of %d" % (out, n, bound))
    print("seed %d: %s" % (seed, ", ".join(sizes) or "ok"))


def status(a):
    seed = int.from_bytes(os.urandom(4), "little")
    inputs = draw(pathlib.Path(a.model).stem, np.random.default_rng(seed), a.full)
    p, _ = run(a, inputs)
    if p.returncode != 1 or ("status %d" % a.want) not in p.stderr:
        sys.exit("seed %d: exit %d (%s), expected status %d" % (
            seed, p.returncode, p.stderr.strip(), a.want))
    print("seed %d: status %d" % (seed, a.want))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "models":
        make_models(sys.argv[2])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("verb", choices=["check", "status"])
    ap.add_argument("--exe", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--want", type=int)
    ap.add_argument("--full", action="store_true")
    a = ap.parse_args()
    check(a) if a.verb == "check" else status(a)


if __name__ == "__main__":
    main()
