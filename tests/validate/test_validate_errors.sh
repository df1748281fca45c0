#!/usr/bin/env bash
# kiln validate's failures are one clear line, never a Python traceback: no Python, Python
# without onnxruntime, a model ONNX Runtime cannot run, no C compiler, a bad model file;
# usage errors exit 2, the rest 1.
# Usage: test_validate_errors.sh PATH/TO/kiln
source "$(dirname "$0")/lib.bash"

KILN_PYTHON=/no/such/python run nopy "$M/chain.onnx"
expect_rc nopy 1 "no Python exits 1"
one_line_error nopy "no Python"

# A Python whose imports fail: a stand-in that hides onnxruntime.
mkdir -p "$TMP/fakepy"
cat >"$TMP/fakepy/python" <<SH
#!/bin/sh
exec "$PY" -c 'import sys; sys.modules["onnxruntime"] = None; sys.argv = sys.argv[1:]; exec(compile(open(sys.argv[0]).read(), sys.argv[0], "exec"))' "\$@"
SH
chmod +x "$TMP/fakepy/python"
KILN_PYTHON="$TMP/fakepy/python" run noort "$M/chain.onnx"
expect_rc noort 1 "Python without onnxruntime exits 1"
one_line_error noort "no onnxruntime"

"$PY" - "$M/future.onnx" <<'PYEOF'
import sys
import onnx
from onnx import TensorProto, helper
g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 99)], ir_version=10),
          sys.argv[1])
PYEOF
run future "$M/future.onnx"
expect_rc future 1 "a model ONNX Runtime cannot load exits 1"
one_line_error future "ONNX Runtime cannot load"

run nocc "$M/chain.onnx" --cc /no/such/cc
expect_rc nocc 1 "no C compiler exits 1"
one_line_error nocc "no C compiler"

printf 'not a model' >"$M/bad.onnx"
run bad "$M/bad.onnx"
expect_rc bad 1 "a malformed model exits 1"

run none
expect_rc none 2 "no MODEL is a usage error"
run both "$M/chain.onnx" --seed 1 --inputs "$TMP"
expect_rc both 2 "--seed with --inputs is a usage error"
run rtol "$M/chain.onnx" --rtol -1
expect_rc rtol 2 "a negative --rtol is a usage error"
run target "$M/chain.onnx" --target cuda
expect_rc target 2 "an unknown --target is a usage error"
run flag "$M/chain.onnx" --frobnicate
expect_rc flag 2 "an unknown option is a usage error"
run missing "$M/no-such.onnx"
expect_rc missing 1 "a missing model file exits 1, like kiln inspect"
"$KILN" help validate | grep -q -- "--per-node" && pass "kiln help validate" || fail "help"
"$KILN" --help | grep -q "validate" && pass "kiln --help lists validate" || fail "main help"
finish
