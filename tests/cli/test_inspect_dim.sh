#!/usr/bin/env bash
# --dim NAME=VALUE fixes a symbolic dimension: the printed shapes (text and --json) show
# the value instead of the name, and only for the dims named. Usage: test_inspect_dim.sh KILN
set -u
KILN_BIN="${1:?usage: $0 PATH/TO/kiln}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PY="${KILN_PY:-$HOME/.cache/kiln/venv/bin/python}"
MODEL="$ROOT/examples/models/tinycnn.onnx"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fails=0

check() { # check WHAT COMMAND...
    local what="$1"
    shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi
}

"$KILN_BIN" inspect "$MODEL" >"$TMP/plain.txt" || fails=$((fails + 1))
"$KILN_BIN" inspect --dim batch=4 "$MODEL" >"$TMP/dim.txt" || fails=$((fails + 1))
check "without --dim the input shape names batch" \
    grep -qE '^  image +f32\[batch,1,8,8\]$' "$TMP/plain.txt"
check "without --dim the output shape names batch" \
    grep -qE '^  probs +f32\[batch,10\]$' "$TMP/plain.txt"
check "--dim batch=4 puts 4 in the input shape" grep -qE '^  image +f32\[4,1,8,8\]$' "$TMP/dim.txt"
check "--dim batch=4 puts 4 in the output shape" grep -qE '^  probs +f32\[4,10\]$' "$TMP/dim.txt"
check "--dim batch=4 leaves no batch in the shapes" bash -c "! grep -q 'batch' '$TMP/dim.txt'"

# A model with two symbolic dims: fixing one keeps the other by name.
"$PY" - "$TMP/two.onnx" <<'PYEOF'
import sys
from onnx import TensorProto, helper, save
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "seq", 4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", "seq", 4])
g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "two", [x], [y])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PYEOF
"$KILN_BIN" inspect --json --dim seq=16 "$TMP/two.onnx" >"$TMP/two.json" || fails=$((fails + 1))
check "--dim seq=16 fixes seq and keeps n (json)" "$PY" -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert [v["shape"] for v in j["inputs"] + j["outputs"]] == [["n", 16, 4]] * 2, j
' "$TMP/two.json"
"$KILN_BIN" inspect --dim n=2 --dim seq=3 "$TMP/two.onnx" >"$TMP/two.txt" || fails=$((fails + 1))
check "two --dim flags fix both dims" grep -qE '^  x +f32\[2,3,4\]$' "$TMP/two.txt"

echo "test_inspect_dim: $fails failed"
exit $((fails > 0))
