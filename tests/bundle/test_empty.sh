#!/usr/bin/env bash
# Empty tensors follow the specification: an op whose input is empty but whose output is not
# writes every output element (the test main poisons them first), built under ASan/UBSan.
# A MaxPool that leaves a 1x1 image empty (kernel 2, stride 2: floor(-1/2) + 1 = 0) feeds
# GlobalAveragePool (a mean of nothing: NaN, as numpy's mean), GlobalMaxPool and ReduceMax
# (-inf, ReduceMax's rule), ReduceMean (NaN), ReduceSum and ReduceL2 (0); MatMul and Gemm with
# K = 0 give zeros (plus Gemm's C).
# Usage: test_empty.sh PATH/TO/kiln
. "$(dirname "$0")/lib.bash"

"$PY" - "$TMP/empty.onnx" <<'EOF' || fail "writing the model"
import sys
import onnx
from onnx import TensorProto as TP, helper
nodes = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("GlobalAveragePool", ["p"], ["gap"]),
         helper.make_node("GlobalMaxPool", ["p"], ["gmp"]),
         helper.make_node("ReduceMean", ["p"], ["mean"], axes=[2, 3]),
         helper.make_node("ReduceMax", ["p"], ["max"], axes=[2, 3]),
         helper.make_node("ReduceSum", ["p", "axes"], ["sum"]),
         helper.make_node("ReduceL2", ["p"], ["l2"], axes=[2, 3]),
         helper.make_node("MatMul", ["a", "b"], ["mm"]),
         helper.make_node("Gemm", ["a", "b", "c"], ["gemm"])]
inputs = [helper.make_tensor_value_info("x", TP.FLOAT, [1, 2, 1, 1]),
          helper.make_tensor_value_info("a", TP.FLOAT, [2, 0]),
          helper.make_tensor_value_info("b", TP.FLOAT, [0, 3])]
outs = ["gap", "gmp", "mean", "max", "sum", "l2", "mm", "gemm"]
g = helper.make_graph(nodes, "empty", inputs,
                      [helper.make_tensor_value_info(n, TP.FLOAT, None) for n in outs],
                      initializer=[helper.make_tensor("axes", TP.INT64, [2], [2, 3]),
                                   helper.make_tensor("c", TP.FLOAT, [3], [1.5, -2, 4])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.save(m, sys.argv[1])
EOF

out="$TMP/empty"
if "$KILN" compile "$TMP/empty.onnx" -o "$out" --test-main >"$TMP/compile.log" 2>&1; then
    pass "kiln compiles the model with empty intermediates"
else
    fail "kiln compile"
    cat "$TMP/compile.log"
    finish
fi
check "the bundle builds strictly with ASan and UBSan" \
    gcc $STRICT $SAN_FLAGS -I"$out" "$out/empty.c" "$out/empty_test_main.c" -o "$TMP/empty.exe" -lm
"$PY" -c "import numpy as np; np.array([[[[0.5]], [[-0.25]]]], '<f4').tofile('$TMP/x.bin')"
: >"$TMP/a.bin"
: >"$TMP/b.bin"
outs=()
for k in 0 1 2 3 4 5 6 7; do outs+=("$TMP/o$k.bin"); done
check "the bundle runs" "$TMP/empty.exe" "$out/empty_weights.bin" "$TMP/x.bin" "$TMP/a.bin" \
    "$TMP/b.bin" "${outs[@]}"
check "every output element is written with the specification's value" "$PY" -c "
import numpy as np, sys
want = {0: [np.nan] * 2, 1: [-np.inf] * 2, 2: [np.nan] * 2, 3: [-np.inf] * 2, 4: [0.0] * 2,
        5: [0.0] * 2, 6: [0.0] * 6, 7: [1.5, -2, 4] * 2}
bad = 0
for k, w in want.items():
    got = np.fromfile('$TMP/o%d.bin' % k, '<f4')
    if got.shape != (len(w),) or not np.array_equal(got, np.array(w, np.float32), equal_nan=True):
        print('output', k, 'is', got, 'want', w)
        bad += 1
sys.exit(bad > 0)"
finish
