#!/usr/bin/env bash
# Builds examples/digits with the given kiln, classifies the held-out test split with the C
# bundle and with ONNX Runtime (the venv python), and checks that the two predict the same
# class for every test image. Prints both accuracies; exits non-zero on any difference.
# Usage: examples/digits/check.sh PATH/TO/kiln
set -euo pipefail
if [ $# -ne 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 PATH/TO/kiln" >&2
    exit 2
fi
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KILN="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
PY="${KILN_PY:-/root/.cache/kiln/venv/bin/python}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

cmake -S "$HERE" -B "$TMP/build" -DKILN="$KILN" -DCMAKE_BUILD_TYPE=Release >"$TMP/cmake.log" 2>&1 &&
    cmake --build "$TMP/build" >>"$TMP/cmake.log" 2>&1 ||
    { cat "$TMP/cmake.log"; echo "FAIL: building digits_eval"; exit 1; }
"$TMP/build/digits_eval" "$HERE/digits_test.bin" "$TMP/c_pred.txt"

"$PY" - "$HERE/digits.onnx" "$HERE/digits_test.bin" "$TMP/c_pred.txt" <<'PYEOF'
import struct
import sys

import numpy as np
import onnxruntime as ort

model, split, c_pred = sys.argv[1:]
data = open(split, "rb").read()
assert data[:4] == b"KDG1", "not a digits test split"
n = struct.unpack("<I", data[4:8])[0]
images = np.frombuffer(data, "<f4", n * 64, 8).reshape(n, 1, 1, 8, 8)
labels = np.frombuffer(data, np.uint8, n, 8 + n * 64 * 4)
sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
ort_pred = np.array([int(np.argmax(sess.run(None, {"image": x})[0])) for x in images])
c = np.loadtxt(c_pred, dtype=np.int64, ndmin=1)
print(f"ONNX Runtime accuracy: {np.mean(ort_pred == labels):.4f} "
      f"({int(np.sum(ort_pred == labels))}/{n})")
if c.shape != ort_pred.shape:
    sys.exit(f"FAIL: {c.size} C predictions for {n} images")
diff = np.flatnonzero(c != ort_pred)
if diff.size:
    sys.exit(f"FAIL: C bundle and ONNX Runtime disagree on {diff.size} of {n} images "
             f"(first: image {diff[0]}, C {c[diff[0]]}, ORT {ort_pred[diff[0]]})")
print(f"ok: the C bundle predicts the same class as ONNX Runtime on all {n} test images")
PYEOF
