#!/usr/bin/env bash
# kiln compile writes its output folder atomically (cli/outdir.c): a compile that fails
# leaves an existing bundle untouched (and creates no folder when there was none); a
# folder of other files is refused, not replaced; a compile killed (SIGKILL) at any moment
# leaves at the target either the old bundle, whole, or the new one, whole, never a part.
# The kills land across a compile of a model with 48 MB of weights, so some fall while the
# files are being written. Usage: test_atomic_output.sh PATH/TO/kiln
set -u
KILN_BIN="${1:?usage: $0 PATH/TO/kiln}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PY="${KILN_PY:-/root/.cache/kiln/venv/bin/python}"
SMALL="$ROOT/examples/models/tinycnn.onnx"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
KILLS=8            # kill points spread over one compile
WEIGHT_FLOATS=12000000  # 48 MB of weights: writing them takes a noticeable time
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

# The file names and sizes of a folder, one per line ("-" when the folder is missing).
listing() {
    if [ -d "$1" ]; then (cd "$1" && find . -type f -printf '%p %s\n' | sort); else echo "-"; fi
}

# A model that compiles (slowly, for its weights) and one Kiln refuses after loading.
"$PY" - "$TMP" "$WEIGHT_FLOATS" <<'PYEOF' || { echo "FAIL making the models"; exit 1; }
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper
out, n = sys.argv[1], int(sys.argv[2])
vi = helper.make_tensor_value_info
w = numpy_helper.from_array(np.arange(n, dtype=np.float32).reshape(n // 1000, 1000) / n, "w")
g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "big",
                      [vi("x", 1, [1, n // 1000])], [vi("y", 1, [1, 1000])], initializer=[w])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.save(m, out + "/big.onnx")
g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]),
                       helper.make_node("NonZero", ["r"], ["y"])], "refused",
                      [vi("x", 1, [4])], [vi("y", 1, None)])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.save(m, out + "/refused.onnx")
PYEOF

# 1. a failed compile: no folder where there was none; an old bundle stays as it was
"$KILN_BIN" compile "$TMP/refused.onnx" -o "$TMP/none" >/dev/null 2>"$TMP/err"
rc=$?
if [ "$rc" -eq 1 ] && [ ! -e "$TMP/none" ] && [ -z "$(ls -A "$TMP" | grep kiln-tmp)" ]; then
    ok "a refused model creates no folder (exit 1)"
else
    bad "refused model: exit $rc, folder: $(ls -a "$TMP" | tr '\n' ' ')"
fi
"$KILN_BIN" compile "$SMALL" -o "$TMP/keep" --name keep --dim batch=1 >/dev/null 2>&1 || bad "compile into keep"
before="$(listing "$TMP/keep"; md5sum "$TMP/keep/keep.c")"
"$KILN_BIN" compile "$TMP/refused.onnx" -o "$TMP/keep" >/dev/null 2>"$TMP/err"
rc=$?
after="$(listing "$TMP/keep"; md5sum "$TMP/keep/keep.c")"
if [ "$rc" -eq 1 ] && [ "$before" = "$after" ] && grep -q 'error:' "$TMP/err"; then
    ok "a refused model leaves the old bundle untouched"
else
    bad "refused model over an old bundle: exit $rc, changed: $([ "$before" = "$after" ] || echo yes)"
fi

# 2. a success replaces a bundle whole: no file of the old one is left
"$KILN_BIN" compile "$SMALL" -o "$TMP/keep" --name other --dim batch=1 >/dev/null 2>&1
if [ -f "$TMP/keep/other.c" ] && [ ! -e "$TMP/keep/keep.c" ]; then
    ok "a new bundle replaces the old one whole"
else
    bad "replace: $(ls "$TMP/keep" | tr '\n' ' ')"
fi

# 3. a folder of other files is refused before anything is written
mkdir -p "$TMP/user" && echo notes >"$TMP/user/notes.txt"
"$KILN_BIN" compile "$SMALL" -o "$TMP/user" --dim batch=1 >/dev/null 2>"$TMP/err"
rc=$?
if [ "$rc" -eq 1 ] && [ "$(ls -A "$TMP/user")" = notes.txt ] && grep -q 'not a Kiln bundle' "$TMP/err"
then
    ok "a folder that is no bundle is not replaced (exit 1)"
else
    bad "user folder: exit $rc, holds $(ls -A "$TMP/user" | tr '\n' ' ')"
fi

# 4. kills at spread moments of a compile (and a little after its usual end): the target
#    is the old bundle or the new one
"$KILN_BIN" compile "$SMALL" -o "$TMP/old" --name big --dim batch=1 >/dev/null 2>&1
old_listing="$(listing "$TMP/old")"
start=$(date +%s%N)
"$KILN_BIN" compile "$TMP/big.onnx" -o "$TMP/ref" --name big >/dev/null 2>&1 ||
    bad "compile of the big model"
span_ms=$((($(date +%s%N) - start) / 1000000))
new_listing="$(listing "$TMP/ref")"
n_old=0 n_new=0
for k in $(seq 1 "$KILLS"); do
    rm -rf "$TMP/t" && cp -r "$TMP/old" "$TMP/t"
    "$KILN_BIN" compile "$TMP/big.onnx" -o "$TMP/t" --name big >/dev/null 2>&1 &
    pid=$!
    sleep "$(awk -v s="$span_ms" -v k="$k" -v n="$KILLS" 'BEGIN { printf "%.3f", 1.2 * s * k / n / 1000 }')"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    now="$(listing "$TMP/t")"
    if [ "$now" = "$old_listing" ]; then
        n_old=$((n_old + 1))
    elif [ "$now" = "$new_listing" ]; then
        n_new=$((n_new + 1))
    else
        bad "kill $k of $KILLS (at $((12 * span_ms * k / KILLS / 10)) ms): the target holds neither bundle:"
        echo "$now" | head -5 | sed 's/^/     | /'
    fi
done
ok "$KILLS kills over a $span_ms ms compile: the old bundle whole $n_old times, the new one $n_new times"
"$KILN_BIN" compile "$TMP/big.onnx" -o "$TMP/t" --name big >/dev/null 2>&1 &&
    [ "$(listing "$TMP/t")" = "$new_listing" ] && ok "the next compile after the kills succeeds" ||
    bad "compile after the kills"

if [ "$fails" -eq 0 ]; then echo "test_atomic_output: all passed"; else echo "test_atomic_output: $fails failed"; fi
[ "$fails" -eq 0 ]
