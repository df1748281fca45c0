#!/usr/bin/env bash
# `kiln compile --target cuda` names every node that runs as C code on one GPU thread (the
# generic path), with its size and why: an op without a CUDA kernel, or the kernel's own
# refusal; the bundle's README counts them. A model of native ops gets no such warning, nor
# does one whose C kernel is element-parallel (Resize here: one thread per output element).
# No GPU needed. usage: tests/cuda/generic_warnings.sh KILN; ends with "N passed, N failed".
set -u
KILN=$(realpath "$1")
PY=${KILN_PYTHON:-/root/.cache/kiln/venv/bin/python}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0 failed=0

"$PY" - "$TMP" <<'PYEOF'
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save
d = sys.argv[1]
def model(name, nodes, x_shape, inits=(), out_type=TensorProto.FLOAT):
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", out_type, None)], list(inits))
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]), f"{d}/{name}.onnx")
scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
model("resize", [helper.make_node("Relu", ["x"], ["r"], name="relu"),
                 helper.make_node("Resize", ["r", "", "scales"], ["y"], name="up", mode="nearest")],
      [1, 3, 8, 8], [scales])
model("cumsum", [helper.make_node("Relu", ["x"], ["r"], name="relu"),
                 helper.make_node("CumSum", ["r", "axis"], ["y"], name="cum")],
      [1, 3, 8, 8], [numpy_helper.from_array(np.array(3, np.int64), "axis")])
model("cast8", [helper.make_node("Cast", ["x"], ["y"], name="to_f8",
                                 to=TensorProto.FLOAT8E4M3FN)], [4, 5],
      out_type=TensorProto.FLOAT8E4M3FN)
model("native", [helper.make_node("Relu", ["x"], ["r"], name="relu"),
                 helper.make_node("Sigmoid", ["r"], ["y"], name="sig")], [2, 8])
PYEOF

# expect NAME DESCRIPTION GREP-PATTERN: the compile's stderr matches the pattern
expect() {
    local m=$1 what=$2 pattern=$3
    if "$KILN" compile "$TMP/$m.onnx" -o "$TMP/out_$m" --name m --target cuda \
            2>"$TMP/$m.err" >/dev/null && grep -Eq "$pattern" "$TMP/$m.err"; then
        echo "ok   $m: $what"; passed=$((passed + 1))
    else
        echo "FAIL $m: $what"; sed 's/^/     | /' "$TMP/$m.err" | head -5; failed=$((failed + 1))
    fi
}
expect cumsum "an op without a CUDA kernel is named, with its size" \
    "warning: node 'cum' \(CumSum, opset 21\) runs as C code on one GPU thread \(192 output elements\): no CUDA kernel for this op"
expect cast8 "a node its CUDA kernel refuses is named, with the kernel's reason" \
    "warning: node 'to_f8' \(Cast, opset 21\) runs as C code on one GPU thread \(20 output elements\): the CUDA backend does not support a cast from f32 to f8e4m3fn"
if grep -q "1 node(s) without a CUDA kernel run the C backend's code on one device thread" \
        "$TMP/out_cumsum/README.md"; then
    echo "ok   cumsum: the README counts the node"; passed=$((passed + 1))
else
    echo "FAIL cumsum: the README counts the node"; failed=$((failed + 1))
fi
# Resize's C kernel loops over its 768 outputs with RT_FOR_EACH: 3 blocks of 256 threads
if "$KILN" compile "$TMP/resize.onnx" -o "$TMP/out_resize" --name m --target cuda \
        2>"$TMP/resize.err" >/dev/null && ! grep -q "warning" "$TMP/resize.err" &&
        grep -q "1 node(s) (Reduce\*, .*) run the C backend.s code on one device" \
            "$TMP/out_resize/README.md" && grep -q "kc_launch(m_k[0-9]*, dim3(3), dim3(256), 0, s," "$TMP/out_resize/m.cu"; then
    echo "ok   resize: element-parallel, no warning, one thread per output"; passed=$((passed + 1))
else
    echo "FAIL resize: element-parallel, no warning, one thread per output"
    sed 's/^/     | /' "$TMP/resize.err" | head -5; failed=$((failed + 1))
fi
if "$KILN" compile "$TMP/native.onnx" -o "$TMP/out_native" --name m --target cuda \
        2>"$TMP/native.err" >/dev/null && ! grep -q "warning" "$TMP/native.err" &&
        ! grep -q "one device thread" "$TMP/out_native/README.md"; then
    echo "ok   native: no warning and no count for a model of native kernels"; passed=$((passed + 1))
else
    echo "FAIL native: no warning and no count for a model of native kernels"
    sed 's/^/     | /' "$TMP/native.err" | head -5; failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
