#!/usr/bin/env bash
# INT8 against float on every CNN and transformer of the model suite (tests/int8/suite.py):
# kiln calibrate, kiln compile --int8 and the int8 bundle against ONNX Runtime's float
# outputs; prints the table and "N passed, N failed, N skipped". The exports come from the
# model suite's cache (tests/models/run.sh fills it; missing ones are exported here).
# Usage: tests/int8/suite.sh PATH/TO/kiln [--docs docs/int8-suite.md] [FILTER...]
set -euo pipefail
if [ $# -lt 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 PATH/TO/kiln [--docs FILE] [FILTER...]" >&2
    exit 2
fi
KILN="$1"
shift
PY="${KILN_PY:-/root/.cache/kiln/venv/bin/python}"
exec "$PY" "$(dirname "${BASH_SOURCE[0]}")/suite.py" --kiln "$KILN" "$@"
