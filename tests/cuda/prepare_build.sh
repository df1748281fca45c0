#!/usr/bin/env bash
# Build check of the GPU machine's node-test layout (no GPU needed): scripts/conformance
# --target cuda --prepare-only for a few node-test families whose bundles reach different
# parts of the same runtime files (reductions, NonMaxSuppression, GridSample, pools), and
# for the differential test's random models of seeds 10..29 (tests/difftest/node_export.py:
# fused products, control flow, QDQ; every one must compile for CUDA), then
# scripts/gpu-conformance --build-only, which builds them in batches: many bundles in one
# nvcc translation unit over one shared runtime folder. Each bundle's own runtime copy is cut
# to what it reaches, so the shared folder must hold the files whole; this check fails when
# it does not. The batches are built as compute_90a PTX (cicc, no ptxas: the GPU machine's
# run builds sm_90a code; the difftest models' batch 115 -> 75 s on 2 cores).
# usage: tests/cuda/prepare_build.sh KILN [WORK_DIR]; ends with "N passed, N failed".
set -u
KILN=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=${2:-$(mktemp -d)}
PY=${KILN_PYTHON:-/root/.cache/kiln/venv/bin/python}
JOBS=${KILN_JOBS:-2}
FAMILIES="test_reduce_log_sum_exp test_nonmaxsuppression test_gridsample test_averagepool_2d"
SEEDS=10:30
fail() { echo "$1"; echo "0 passed, 1 failed"; exit 1; }
"$PY" "$ROOT/scripts/conformance" --target cuda --prepare-only "$WORK/prepared" --kiln "$KILN" \
    --jobs "$JOBS" $FAMILIES || fail "prepare failed"
"$PY" "$ROOT/tests/difftest/node_export.py" "$SEEDS" "$WORK/dtnodes" >/dev/null || fail "node_export failed"
KILN_NODE_DIR="$WORK/dtnodes" "$PY" "$ROOT/scripts/conformance" --target cuda --prepare-only \
    "$WORK/dtprepared" --kiln "$KILN" --jobs "$JOBS" -v | tee "$WORK/dtprepare.log" ||
    fail "prepare of the difftest models failed"
grep -q ", 0 refused or failed" "$WORK/dtprepare.log" ||
    fail "a difftest model did not compile for CUDA (the lines above say why)"
r=0
for d in prepared dtprepared; do
    "$PY" "$ROOT/scripts/gpu-conformance" "$WORK/$d" --build-only --jobs "$JOBS" --arch compute_90a \
        --build "$WORK/build-$d" | tee "$WORK/$d.log" || r=1
done
cat "$WORK"/prepared.log "$WORK"/dtprepared.log | grep -Eo '[0-9]+ passed, [0-9]+ failed' |
    awk '{p += $1; f += $3} END {print p " passed, " f " failed"}'
exit $r
