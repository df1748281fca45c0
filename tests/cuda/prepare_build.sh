#!/usr/bin/env bash
# Build check of the GPU machine's node-test layout (no GPU needed): scripts/conformance
# --target cuda --prepare-only for a few node-test families whose bundles reach different
# parts of the same runtime files (reductions, NonMaxSuppression, GridSample, pools), then
# scripts/gpu-conformance --build-only, which builds them in batches: many bundles in one
# nvcc translation unit over one shared runtime folder. Each bundle's own runtime copy is cut
# to what it reaches, so the shared folder must hold the files whole; this check fails when
# it does not. usage: tests/cuda/prepare_build.sh KILN [WORK_DIR]; ends with
# "N passed, N failed".
set -u
KILN=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=${2:-$(mktemp -d)}
PY=${KILN_PYTHON:-/root/.cache/kiln/venv/bin/python}
FAMILIES="test_reduce_log_sum_exp test_nonmaxsuppression test_gridsample test_averagepool_2d"
"$PY" "$ROOT/scripts/conformance" --target cuda --prepare-only "$WORK/prepared" --kiln "$KILN" \
    $FAMILIES || { echo "prepare failed"; echo "0 passed, 1 failed"; exit 1; }
"$PY" "$ROOT/scripts/gpu-conformance" "$WORK/prepared" --build-only --jobs "${KILN_JOBS:-2}" \
    --build "$WORK/build"
