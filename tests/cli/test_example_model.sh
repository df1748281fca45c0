#!/usr/bin/env bash
# The shipped example model is what scripts/make_example_model.py writes, byte for byte,
# passes the onnx checker, and runs in ONNX Runtime with a batch of any size.
# Usage: test_example_model.sh PATH/TO/kiln (the binary is not used here)
set -u
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PY="${KILN_PY:-$HOME/.cache/kiln/venv/bin/python}"
MODEL="$ROOT/examples/models/tinycnn.onnx"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fails=0

if "$PY" "$ROOT/scripts/make_example_model.py" --output "$TMP/tinycnn.onnx" >/dev/null &&
    cmp -s "$MODEL" "$TMP/tinycnn.onnx"; then
    echo "ok   make_example_model.py rewrites examples/models/tinycnn.onnx byte for byte"
else
    echo "FAIL examples/models/tinycnn.onnx differs from what make_example_model.py writes"
    fails=$((fails + 1))
fi

if "$PY" - "$MODEL" <<'PYEOF'; then
import sys
import numpy as np
import onnx
import onnxruntime as ort
m = onnx.load(sys.argv[1])
onnx.checker.check_model(m, full_check=True)
assert [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")] == [17]
size = len(open(sys.argv[1], "rb").read())
assert size < 16384, f"{size} bytes: the example model should stay commit-sized"
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
for batch in (1, 5):
    x = np.random.default_rng(batch).random((batch, 1, 8, 8), dtype=np.float32)
    (y,) = s.run(None, {"image": x})
    assert y.shape == (batch, 10), y.shape
    assert np.allclose(y.sum(axis=1), 1.0, atol=1e-5), y.sum(axis=1)
PYEOF
    echo "ok   the example model passes the checker and runs in ONNX Runtime (batch 1 and 5)"
else
    echo "FAIL the example model does not check or run"
    fails=$((fails + 1))
fi

echo "test_example_model: $fails failed"
exit $((fails > 0))
