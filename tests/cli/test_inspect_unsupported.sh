#!/usr/bin/env bash
# kiln inspect on a model with ops outside the op table, a Constant node and hostile
# names: unsupported ops are listed all at once with domain and count, Constant tensors
# count as parameters, --json stays valid JSON whatever bytes the names hold, and the text
# form prints no control characters. Usage: test_inspect_unsupported.sh PATH/TO/kiln
set -u
KILN_BIN="${1:?usage: $0 PATH/TO/kiln}"
PY="${KILN_PY:-$HOME/.cache/kiln/venv/bin/python}"

exec "$PY" - "$KILN_BIN" <<'PYEOF'
import json, os, subprocess, sys, tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper

kiln = sys.argv[1]
fails = 0


def check(ok, what, detail=""):
    global fails
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else f": {detail}"))
    fails += not ok


# Names: JSON's special characters, a control character, non-ASCII, and a placeholder
# that is patched below into a byte that is not UTF-8.
IN_NAME = 'in "quoted" \\ back\tslash\nnew\x01line é ∑ 🙂'
BAD = "bad-utf8-XX"
x = helper.make_tensor_value_info(IN_NAME, TensorProto.FLOAT, ["n", 3])
y = helper.make_tensor_value_info(BAD, TensorProto.FLOAT, ["n", 3])
bias = numpy_helper.from_array(np.arange(3, dtype=np.float32), "bias")
nodes = [
    helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(
        np.ones((2, 3), dtype=np.float32), "c")),
    helper.make_node("Constant", [], ["k"], value_ints=[1, 2, 3, 4]),
    helper.make_node("Add", [IN_NAME, "bias"], ["a"]),
    helper.make_node("Foo", ["a"], ["f1"], domain="com.example"),
    helper.make_node("Foo", ["f1"], ["f2"], domain="com.example"),
    helper.make_node("Bar", ["f2", "c", "k"], [BAD], domain="com.other"),
]
graph = helper.make_graph(nodes, "weird", [x], [y], initializer=[bias])
model = helper.make_model(graph, producer_name="tab\there", opset_imports=[
    helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1),
    helper.make_opsetid("com.other", 2)])
data = model.SerializeToString().replace(BAD.encode(), b"bad-utf8-\xff\xc3")

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "weird.onnx")
    with open(path, "wb") as f:
        f.write(data)
    pj = subprocess.run([kiln, "inspect", "--json", path], capture_output=True)
    pt = subprocess.run([kiln, "inspect", path], capture_output=True)

check(pj.returncode == 0, "inspect --json of a model with unknown ops exits 0", pj.stderr)
check(pt.returncode == 0, "inspect of a model with unknown ops exits 0", pt.stderr)
try:
    j = json.loads(pj.stdout.decode("utf-8"))
    check(True, "the output is UTF-8 and parses as JSON")
except ValueError as e:
    check(False, "the output is UTF-8 and parses as JSON", e)
    sys.exit(1)

check([v["name"] for v in j["inputs"]] == [IN_NAME], "escaped names read back unchanged",
      j["inputs"])
check([v["name"] for v in j["outputs"]] == ["bad-utf8-\ufffd\ufffd"],
      "bytes that are not UTF-8 become U+FFFD", j["outputs"])
check(j["producer"]["name"] == "tab\there", "the producer name is escaped")
want = [{"op": "Foo", "domain": "com.example", "count": 2, "reason": "not in the op table"},
        {"op": "Bar", "domain": "com.other", "count": 1, "reason": "not in the op table"}]
check(j["unsupported"] == want, "unknown ops are listed with domain and count",
      j["unsupported"])
check({(o["domain"], o["op"]): o["count"] for o in j["ops"]} ==
      {("ai.onnx", "Constant"): 2, ("ai.onnx", "Add"): 1, ("com.example", "Foo"): 2,
       ("com.other", "Bar"): 1}, "the histogram has every op", j["ops"])
check(j["parameters"] == {"count": 3 + 6 + 4, "bytes": 12 + 24 + 32, "tensors": 3},
      "initializers and Constant values are parameters", j["parameters"])
check(sorted((o["domain"], o["version"]) for o in j["opsets"]) ==
      [("ai.onnx", 17), ("com.example", 1), ("com.other", 2)], "every opset is listed")

text = pt.stdout
bad = sorted({b for b in text if b < 0x20 and b != 0x0A or b == 0x7F})
check(not bad, "the text form prints no control characters", bad)
lines = text.decode("utf-8", "replace").splitlines()
check("unsupported ops (3 nodes):" in lines, "text counts the unsupported nodes")
check("  2  Foo [com.example]  not in the op table" in lines, "text lists Foo with its domain")
check("  1  Bar [com.other]  not in the op table" in lines, "text lists Bar with its domain")
check(any(l.startswith("opsets: ai.onnx 17, com.example 1, com.other 2") for l in lines),
      "text lists every opset")

print(f"test_inspect_unsupported: {fails} failed")
sys.exit(1 if fails else 0)
PYEOF
