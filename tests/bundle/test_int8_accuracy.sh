#!/usr/bin/env bash
# INT8 accuracy on a trained model with real labels (issue 13 item 6): the digits CNN
# (examples/digits, scikit-learn's 8x8 digits). kiln calibrate runs on the first 100 images of
# the held-out split (every method), the other 260 are scored: float (the Kiln fp32 bundle)
# against int8 per method, top-1 accuracy. Passes when the default method (minmax) and mse
# lose at most 0.5 points and every method at most 2. Prints the table; rerun it as
#   bash tests/bundle/test_int8_accuracy.sh build/kiln
# Usage: test_int8_accuracy.sh PATH/TO/kiln
. "$(dirname "$0")/lib.bash"

W="$TMP/acc"
MODEL="$ROOT/examples/digits/digits.onnx"
mkdir -p "$W/cal"
"$PY" - "$ROOT/examples/digits/digits_test.bin" "$W" <<'PYEOF' || { fail "the digits split is read"; finish; }
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
np.save(f"{w}/score_x.npy", images[100:])
np.save(f"{w}/score_y.npy", labels[100:])
PYEOF
pass "the digits split is read (100 to calibrate, 260 to score)"

build_exe() { # NAME [kiln compile options]
    local name="$1"
    shift
    "$KILN" compile "$MODEL" -o "$W/$name" --test-main --quiet "$@" &&
        cc -O2 -march=native -I"$W/$name" "$W/$name/digits.c" "$W/$name/digits_test_main.c" -o "$W/$name.exe" -lm
}
check "the float bundle builds" build_exe float
methods="minmax percentile:99.99 entropy mse"
for m in $methods; do
    n="${m%%:*}"
    check "kiln calibrate --method $m" "$KILN" calibrate "$MODEL" --data "$W/cal" --method "$m" -o "$W/$n.qparams" --quiet
    check "the $n int8 bundle builds" build_exe "int8-$n" --int8 "$W/$n.qparams"
done

check "int8 top-1 stays within 0.5 points of float (minmax, mse) and 2 points (all)" "$PY" - "$W" $methods <<'PYEOF'
import subprocess, sys
import numpy as np
w, methods = sys.argv[1], [m.split(":")[0] for m in sys.argv[2:]]
x, y = np.load(f"{w}/score_x.npy"), np.load(f"{w}/score_y.npy")
def accuracy(name):
    hits = 0
    for xi, yi in zip(x, y):
        xi.astype(np.float32).tofile(f"{w}/in.bin")
        subprocess.run([f"{w}/{name}.exe", f"{w}/{name}/digits_weights.bin", f"{w}/in.bin",
                        f"{w}/out.bin"], check=True)
        hits += int(np.fromfile(f"{w}/out.bin", np.float32).argmax() == yi)
    return 100.0 * hits / len(y)
base = accuracy("float")
print(f"| model | float | " + " | ".join(f"int8 {m}" for m in methods) + " |")
print("|---|---|" + "---|" * len(methods))
acc = {m: accuracy(f"int8-{m}") for m in methods}
print(f"| digits CNN ({len(y)} images) | {base:.2f} | " +
      " | ".join(f"{acc[m]:.2f} ({acc[m] - base:+.2f})" for m in methods) + " |")
ok = all(base - acc[m] <= (0.5 if m in ("minmax", "mse") else 2.0) for m in methods)
sys.exit(0 if ok else 1)
PYEOF
sed 's/^/    /' "$TMP/check.log" | grep '^    |' || true
finish
