#!/usr/bin/env bash
# kiln inspect on the shipped example model: the op histogram, parameter count, inputs,
# outputs and MACs it prints (text and --json) match what Python's onnx package computes
# from the same file, and --ir prints every op. Usage: test_inspect_model.sh PATH/TO/kiln
set -u
KILN_BIN="${1:?usage: $0 PATH/TO/kiln}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PY="${KILN_PY:-$HOME/.cache/kiln/venv/bin/python}"
MODEL="${2:-$ROOT/examples/models/tinycnn.onnx}"

exec "$PY" - "$KILN_BIN" "$MODEL" <<'PYEOF'
import collections, json, subprocess, sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

kiln, path = sys.argv[1], sys.argv[2]
model = onnx.load(path)
fails = 0


def check(ok, what, detail=""):
    global fails
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else f": {detail}"))
    fails += not ok


def run(*args):
    p = subprocess.run([kiln, *args], capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr)
    return p.returncode, p.stdout


def graphs(g):
    yield g
    for n in g.node:
        for a in n.attribute:
            for sub in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                yield from graphs(sub)


def parameters(m):
    """Elements, bytes and tensors of initializers and Constant node values."""
    count = nbytes = tensors = 0
    for g in graphs(m.graph):
        for t in g.initializer:
            a = numpy_helper.to_array(t)
            count, nbytes, tensors = count + a.size, nbytes + a.nbytes, tensors + 1
        for n in g.node:
            if n.op_type != "Constant" or n.domain not in ("", "ai.onnx"):
                continue
            for a in n.attribute:
                if a.name == "value":
                    arr = numpy_helper.to_array(a.t)
                    count, nbytes = count + arr.size, nbytes + arr.nbytes
                elif a.name in ("value_floats", "value_ints"):
                    k = len(a.floats) if a.name == "value_floats" else len(a.ints)
                    count, nbytes = count + k, nbytes + k * (4 if a.name == "value_floats" else 8)
                elif a.name in ("value_float", "value_int"):
                    count, nbytes = count + 1, nbytes + (4 if a.name == "value_float" else 8)
                else:
                    continue
                tensors += 1
    return count, nbytes, tensors


def dims(vi):
    return [d.dim_param if d.HasField("dim_param") else d.dim_value
            for d in vi.type.tensor_type.shape.dim]


def macs(m, batch):
    """MACs of Conv, Gemm and MatMul with the symbolic dim "batch" set, via onnx shapes."""
    m = onnx.ModelProto.FromString(m.SerializeToString())
    for vi in list(m.graph.input) + list(m.graph.output):
        for d in vi.type.tensor_type.shape.dim:
            if d.dim_param == "batch":
                d.dim_value = batch
    m = shape_inference.infer_shapes(m, strict_mode=True)
    shapes = {vi.name: dims(vi) for vi in
              list(m.graph.input) + list(m.graph.value_info) + list(m.graph.output)}
    shapes.update({t.name: list(t.dims) for t in m.graph.initializer})
    total = 0
    for n in m.graph.node:
        if n.op_type == "Conv":
            total += int(np.prod(shapes[n.output[0]])) * int(np.prod(shapes[n.input[1]][1:]))
        elif n.op_type == "Gemm":
            trans_a = any(a.name == "transA" and a.i for a in n.attribute)
            a = shapes[n.input[0]]
            total += int(np.prod(shapes[n.output[0]])) * (a[0] if trans_a else a[1])
        elif n.op_type == "MatMul":
            total += int(np.prod(shapes[n.output[0]])) * shapes[n.input[0]][-1]
    return total


# ---- --json against the onnx package ----
rc, out = run("inspect", "--json", path)
check(rc == 0, "inspect --json exits 0")
try:
    j = json.loads(out)
    check(True, "inspect --json output parses as JSON")
except ValueError as e:
    check(False, "inspect --json output parses as JSON", str(e))
    sys.exit(1)

ops = collections.Counter((n.domain or "ai.onnx", n.op_type) for g in graphs(model.graph)
                          for n in g.node)
got_ops = {(o["domain"], o["op"]): o["count"] for o in j["ops"]}
check(got_ops == dict(ops), "the op histogram matches onnx", f"{got_ops} != {dict(ops)}")
order = [(-o["count"], o["op"]) for o in j["ops"]]
check(order == sorted(order), "ops are sorted by count, then name")
check(j["nodes"] == sum(ops.values()), "the node count matches onnx")
count, nbytes, tensors = parameters(model)
check(j["parameters"] == {"count": count, "bytes": nbytes, "tensors": tensors},
      f"parameters are {count} in {tensors} tensors, {nbytes} bytes", j["parameters"])
check(j["ir_version"] == model.ir_version, "ir_version matches")
check(j["producer"] == {"name": model.producer_name, "version": model.producer_version},
      "producer matches")
want_opsets = sorted((o.domain or "ai.onnx", o.version) for o in model.opset_import)
check(sorted((o["domain"], o["version"]) for o in j["opsets"]) == want_opsets,
      "opsets match", j["opsets"])
inits = {t.name for t in model.graph.initializer}
want_in = [(vi.name, dims(vi)) for vi in model.graph.input if vi.name not in inits]
check([(v["name"], v["shape"]) for v in j["inputs"]] == want_in, "inputs match", j["inputs"])
want_out = [(vi.name, dims(vi)) for vi in model.graph.output]
check([(v["name"], v["shape"]) for v in j["outputs"]] == want_out, "outputs match",
      j["outputs"])
check(all(v["dtype"] == "f32" for v in j["inputs"] + j["outputs"]), "dtypes are f32")
check(j["unsupported"] == [], "no unsupported ops")

# ---- MACs: a term in "batch" without --dim, a number with it ----
per_item = macs(model, 1)
check(per_item > 0 and macs(model, 3) == 3 * per_item, "the onnx MAC count is linear in batch")
check(j["macs"]["terms"] == [{"coeff": per_item, "dims": ["batch"]}]
      and j["macs"]["unknown_nodes"] == 0 and j["macs"]["total"] is None,
      f"MACs are {per_item}*batch", j["macs"])
rc, out = run("inspect", "--json", "--dim", "batch=3", path)
j3 = json.loads(out)
check(j3["macs"]["total"] == 3 * per_item and j3["macs"]["expr"] == str(3 * per_item),
      f"MACs with --dim batch=3 are {3 * per_item}", j3["macs"])

# ---- the text form says the same ----
rc, text = run("inspect", path)
check(rc == 0, "inspect exits 0")
lines = text.splitlines()
width = len(str(max(ops.values())))
for (domain, op), n in ops.items():
    line = f"  {n:>{width}}  {op}" + ("" if domain == "ai.onnx" else f" [{domain}]")
    check(line in lines, f"text lists {n} x {op}", repr(line))
want = f"parameters: {count} in {tensors} tensors, {nbytes} bytes"
check(any(l.startswith(want) for l in lines), "text gives the parameter count", repr(want))
check(f"macs: {per_item}*batch" in lines, "text gives the MACs per batch item")
for name, shape in want_in + want_out:
    check(any(l.split() == [name, "f32[" + ",".join(map(str, shape)) + "]"] for l in lines),
          f"text gives {name} with its shape")
check("unsupported ops: none" in lines, "text says no op is unsupported")

# ---- --ir prints the graph ----
rc, ir = run("inspect", "--ir", path)
check(rc == 0, "inspect --ir exits 0")
for (domain, op) in ops:
    check(op in ir, f"--ir shows {op}")

print(f"test_inspect_model: {fails} failed")
sys.exit(1 if fails else 0)
PYEOF
