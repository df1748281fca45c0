#!/usr/bin/env bash
# No GPU: every kernel of runtime/cuda launched with programmatic dependent launch, and every
# kernel kiln generates into a CUDA bundle (an element-wise node's map kernel, a node on the
# one-thread generic path), waits for the grid before it (tests/cuda/pdl_waits.py); and the
# check itself fails on a copy of the headers with one wait taken out (kc_qgavg_kernel's).
# usage: tests/cuda/pdl_waits.sh [KILN]  (without KILN: the headers only); ends with
# "N passed, N failed".
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KILN=${1:-}
PY="${KILN_PY:-$HOME/.cache/kiln/venv/bin/python}"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
passed=0 failed=0
tally() { # OUTPUT RC: add the check's counts
    passed=$((passed + $(echo "$1" | tail -1 | cut -d' ' -f1)))
    failed=$((failed + $(echo "$1" | tail -1 | cut -d' ' -f3)))
    [ "$2" -eq 0 ] || failed=$((failed + 1))
}
out=$(python3 "$ROOT/tests/cuda/pdl_waits.py" "$ROOT/runtime/cuda")
rc=$?
echo "$out"
tally "$out" $rc
if [ -n "$KILN" ] && [ -x "$PY" ]; then
    node=$("$PY" -c "import onnx, os; print(os.path.dirname(onnx.__file__))")/backend/test/data/node
    for t in test_sigmoid test_where_example test_nonzero_example; do
        if "$KILN" compile "$node/$t/model.onnx" --target cuda -o "$W/$t" --name "${t#test_}" \
            >"$W/$t.log" 2>&1 && grep -q "kc_launch(" "$W/$t/${t#test_}.cu"; then
            out=$(python3 "$ROOT/tests/cuda/pdl_waits.py" "$W/$t/${t#test_}.cu")
            rc=$?
            echo "$out" | grep -v "^[0-9]" | sed "s/^/$t: /"
            tally "$out" $rc
        else
            echo "FAIL $t: no CUDA bundle with a generated kernel"
            failed=$((failed + 1))
        fi
    done
fi
cp "$ROOT"/runtime/cuda/*.cuh "$W/"
python3 - "$W/kc_qconv.cuh" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
i = s.index("__global__ void kc_qgavg_kernel")
j = s.index("kc_pdl_sync();", i)
open(p, "w").write(s[:j] + s[j + len("kc_pdl_sync();"):])
PY
mutated=$(python3 "$ROOT/tests/cuda/pdl_waits.py" "$W")
if echo "$mutated" | grep -q "^FAIL kc_qgavg_kernel"; then
    echo "ok   the check catches a kernel whose wait was taken out"
    passed=$((passed + 1))
else
    echo "FAIL the check missed a kernel whose wait was taken out"
    failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
