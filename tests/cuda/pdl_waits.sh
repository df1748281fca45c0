#!/usr/bin/env bash
# No GPU: every kernel of runtime/cuda launched with programmatic dependent launch waits for the
# grid before it (tests/cuda/pdl_waits.py), and the check itself fails on a copy of the headers
# with one such wait taken out (kc_qgavg_kernel's). usage: tests/cuda/pdl_waits.sh [KILN]
# (KILN unused: the runner passes it to every script); ends with "N passed, N failed".
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
out=$(python3 "$ROOT/tests/cuda/pdl_waits.py" "$ROOT/runtime/cuda")
rc=$?
echo "$out"
passed=$(echo "$out" | tail -1 | cut -d' ' -f1) failed=$(echo "$out" | tail -1 | cut -d' ' -f3)
[ "$rc" -eq 0 ] || failed=$((failed + 1))
cp "$ROOT"/runtime/cuda/*.cuh "$W/"
python3 - "$W/kc_qconv.cuh" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
i = s.index("__global__ void kc_qgavg_kernel")
j = s.index("kc_qpdl_enter();", i)
open(p, "w").write(s[:j] + s[j + len("kc_qpdl_enter();"):])
PY
if python3 "$ROOT/tests/cuda/pdl_waits.py" "$W" | grep -q "^FAIL kc_qgavg_kernel"; then
    echo "ok   the check catches a kernel whose wait was taken out"
    passed=$((passed + 1))
else
    echo "FAIL the check missed a kernel whose wait was taken out"
    failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
