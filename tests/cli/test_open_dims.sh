#!/usr/bin/env bash
# Open dims as exporters write them: a -1 dim (paddle2onnx), a dim without value or name, and
# named symbols. They load as open dims; `kiln compile` without values names each one and the
# flag that fixes it, in one error; --shape INPUT=DIMS (or trtexec's INPUT:DIMS, or a comma
# list) fixes an input's dims by name and axis; --dim and --shape that do not fit the model
# (a symbol or input it lacks, a rank or fixed dim that differs, two values for one symbol)
# are usage errors (exit 2); `-o a/b/c` creates the missing parents.
# Usage: test_open_dims.sh KILN
set -u
KILN_BIN="${1:?usage: $0 PATH/TO/kiln}"
PY="${KILN_PY:-$HOME/.cache/kiln/venv/bin/python}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fails=0
passes=0

check() { # check WHAT COMMAND...
    local what="$1"
    shift
    if "$@" >"$TMP/check.log" 2>&1; then
        echo "ok   $what"
        passes=$((passes + 1))
    else
        echo "FAIL $what"
        sed 's/^/    /' "$TMP/check.log" | tail -n 20
        fails=$((fails + 1))
    fi
}
# status WANT COMMAND...: the command exits with WANT (its output kept in $TMP/out, $TMP/err)
status() {
    local want="$1"
    shift
    "$@" >"$TMP/out" 2>"$TMP/err"
    local got=$?
    [ "$got" -eq "$want" ] || { echo "exit $got, want $want"; cat "$TMP/err"; return 1; }
}

# x: [-1, 3, ?, ?] (a paddle-style -1 batch, two dims with neither value nor name) feeding
# a conv net, and m: [batch, 5] with a named symbol.
"$PY" - "$TMP/open.onnx" <<'PYEOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto as TP, helper, numpy_helper
x = helper.make_tensor_value_info("x", TP.FLOAT, [-1, 3, None, None])
x.type.tensor_type.shape.dim[2].Clear()
x.type.tensor_type.shape.dim[3].Clear()
m = helper.make_tensor_value_info("m", TP.FLOAT, ["batch", 5])
w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("GlobalAveragePool", ["c"], ["p"]),
         helper.make_node("Relu", ["m"], ["r"])]
g = helper.make_graph(nodes, "open", [x, m],
                      [helper.make_tensor_value_info("p", TP.FLOAT, None),
                       helper.make_tensor_value_info("r", TP.FLOAT, None)], [w])
mod = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
mod.ir_version = 8
onnx.save(mod, sys.argv[1])
PYEOF
M="$TMP/open.onnx"

check "-1 and unnamed dims load as open dims (inspect exits 0)" status 0 "$KILN_BIN" inspect "$M"
check "inspect names the open axes after the input and axis" \
    grep -qE '^  x +f32\[x\[0\],3,x\[2\],x\[3\]\]$' "$TMP/out"

check "compile without values exits 1" status 1 "$KILN_BIN" compile "$M" -o "$TMP/b0"
check "compile reports the open dims in one error" \
    test "$(grep -c 'error' "$TMP/err")" -eq 1
check "the error names --dim batch=N for the symbol" grep -q -- '--dim batch=N' "$TMP/err"
check "the error names --shape x=D0x3xD2xD3 for the unnamed axes" \
    grep -q -- '--shape x=D0x3xD2xD3' "$TMP/err"
check "the error lists no value by value" bash -c "! grep -q 'has no static shape' '$TMP/err'"

check "--shape and --dim fix everything: compile exits 0" \
    status 0 "$KILN_BIN" compile "$M" -o "$TMP/b1" --shape x=2x3x16x20 --dim batch=2
check "the bundle's header has the shapes given" \
    grep -qF "const float *x; /* f32[2,3,16,20] 'x' */" "$TMP/b1/open.h"
check "trtexec's INPUT:DIMS and a comma list work too" \
    status 0 "$KILN_BIN" compile "$M" -o "$TMP/b2" --shape x:2x3x16x20,m=2x5
check "a --shape fixes a symbol for every input that has it" \
    status 0 "$KILN_BIN" inspect "$M" --shape m=7x5 --shape x=1x3x8x8
check "  ... m's batch is 7" grep -qE '^  m +f32\[7,5\]$' "$TMP/out"
check "--dim on an open axis by its name works" \
    status 0 "$KILN_BIN" inspect "$M" --dim 'x[2]=9' --dim batch=1
check "  ... axis 2 is 9" grep -qE '^  x +f32\[x\[0\],3,9,x\[3\]\]$' "$TMP/out"

check "--dim of a symbol the model lacks: exit 2" \
    status 2 "$KILN_BIN" compile "$M" -o "$TMP/b3" --dim bacth=1
check "  ... the message names it and the model's open dims" \
    grep -q "dimension 'bacth' is not a symbolic dimension of the model (its open dims: 'x\[0\]'" \
    "$TMP/err"
check "--shape of an input the model lacks: exit 2" \
    status 2 "$KILN_BIN" inspect "$M" --shape y=1x3
check "  ... the message lists the inputs" grep -q "no input 'y' (its inputs: 'x', 'm')" "$TMP/err"
check "--shape with another rank: exit 2" status 2 "$KILN_BIN" inspect "$M" --shape x=1x3x8
check "  ... the message gives both ranks" grep -q "has rank 4, the shape gives 3 dims" "$TMP/err"
check "--shape against a fixed dim: exit 2" status 2 "$KILN_BIN" inspect "$M" --shape x=1x4x8x8
check "  ... the message names the axis" grep -q "axis 1 of input 'x' is 3 in the model" "$TMP/err"
check "--shape and --dim disagreeing on a symbol: exit 2" \
    status 2 "$KILN_BIN" inspect "$M" --dim batch=2 --shape m=3x5
check "malformed --shape: exit 2" status 2 "$KILN_BIN" inspect "$M" --shape x=1x3xHx8
check "the same input twice: exit 2" status 2 "$KILN_BIN" inspect "$M" --shape x=1x3x8x8,x=1x3x8x8
check "validate takes --shape too" \
    status 2 "$KILN_BIN" validate "$M" --shape y=1
check "-o creates missing parent folders" \
    status 0 "$KILN_BIN" compile "$M" -o "$TMP/deep/er/b4" --shape x=1x3x8x8 --dim batch=1
check "  ... and writes the bundle there" test -f "$TMP/deep/er/b4/open.c"

echo "test_open_dims: $passes passed, $fails failed"
exit $((fails > 0))
