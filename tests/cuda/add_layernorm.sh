#!/usr/bin/env bash
# The CUDA backend runs an Add and the LayerNormalization right after it as one kernel
# (kc_add_layernorm) when the normalization alone reads the sum, both operands have the
# sum's shape and type and the row fits a warp's registers (no GPU needed: read from the
# bundle). usage: tests/cuda/add_layernorm.sh KILN; ends with "N passed, N failed".
set -u
KILN=$(realpath "$1")
PY=${KILN_PYTHON:-/root/.cache/kiln/venv/bin/python}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0 failed=0

# model NAME D BIAS_SHAPE EXTRA: x (2,5,D) + y (BIAS_SHAPE) -> LayerNormalization -> out;
# EXTRA=1 also makes the sum a graph output
model() {
    "$PY" - "$TMP/$1.onnx" "$2" "$3" "$4" <<'PYEOF'
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save
path, D, yshape, extra = sys.argv[1], int(sys.argv[2]), eval(sys.argv[3]), sys.argv[4] == "1"
r = np.random.default_rng(3)
f = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
nodes = [helper.make_node("Add", ["x", "y"], ["s"]),
         helper.make_node("LayerNormalization", ["s", "g", "b"], ["out"], axis=-1)]
outs = [f("out", [2, 5, D])] + ([f("s", [2, 5, D])] if extra else [])
g = helper.make_graph(nodes, "m", [f("x", [2, 5, D]), f("y", list(yshape))], outs,
                      [numpy_helper.from_array(r.standard_normal(D).astype(np.float32), "g"),
                       numpy_helper.from_array(r.standard_normal(D).astype(np.float32), "b")])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
PYEOF
}

# want FUSED(1/0) MODEL PRECISION
want() {
    local out="$TMP/b_$2_$3" n
    if ! "$KILN" compile "$TMP/$2.onnx" -o "$out" --name m --target cuda --precision "$3" \
            >"$out.log" 2>&1; then
        echo "FAIL $2 $3: kiln refused it"; failed=$((failed + 1)); return
    fi
    n=$(grep -c 'kc_add_layernorm(s' "$out/m.cu")
    if [ "$n" -eq "$1" ] && [ "$(grep -c 'kc_layernorm(s' "$out/m.cu")" -eq $((1 - $1)) ]; then
        echo "ok   $2 $3: $([ "$1" -eq 1 ] && echo fused || echo two kernels)"
        passed=$((passed + 1))
    else
        echo "FAIL $2 $3: $n fused kernel(s), wanted $1"; failed=$((failed + 1))
    fi
}

model same 768 "(2, 5, 768)" 0
model bcast 768 "(768,)" 0
model output 768 "(2, 5, 768)" 1
model wide 1536 "(2, 5, 1536)" 0
want 1 same fp32
want 1 same fp16
want 0 bcast fp16
want 0 output fp32
want 0 wide fp16
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
