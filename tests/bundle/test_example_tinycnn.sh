#!/usr/bin/env bash
# examples/tinycnn builds with cmake (generating its bundle with this kiln at build time),
# runs on its built-in image, and on a random image prints the probabilities ONNX Runtime
# computes for examples/models/tinycnn.onnx.
# Usage: test_example_tinycnn.sh PATH/TO/kiln
. "$(dirname "$0")/lib.bash"

BLD="$TMP/build-tinycnn"
if ! { cmake -S "$ROOT/examples/tinycnn" -B "$BLD" -DKILN="$KILN" -DCMAKE_C_FLAGS=-Werror &&
       cmake --build "$BLD"; } >"$TMP/build.log" 2>&1; then
    fail "examples/tinycnn builds with cmake (needs kernels for every op of tinycnn.onnx)"
    grep -E 'error' "$TMP/build.log" | head -n 20 | sed 's/^/    /'
    finish
fi
pass "examples/tinycnn builds with cmake"
check "tinycnn_demo classifies its built-in image" "$BLD/tinycnn_demo"
check "tinycnn_demo matches ONNX Runtime on a random image" "$PY" - "$BLD/tinycnn_demo" \
    "$ROOT/examples/models/tinycnn.onnx" "$TMP/img.bin" <<'PYEOF'
import os, re, subprocess, sys
import numpy as np
import onnxruntime as ort
exe, model, img = sys.argv[1:]
seed = int.from_bytes(os.urandom(4), "little")
x = np.random.default_rng(seed).random((1, 1, 8, 8), dtype=np.float32)
x.tofile(img)
out = subprocess.run([exe, img], capture_output=True, text=True, check=True).stdout
got = np.array([float(v) for v in re.findall(r"^class \d+: (\S+)$", out, re.M)], np.float32)
(ref,) = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"image": x})
ok = got.shape == (10,) and np.allclose(got, ref[0], rtol=1e-4, atol=1e-6)
print(f"seed {seed}: got {got}\nwant {ref[0]}")
sys.exit(0 if ok else 1)
PYEOF
finish
