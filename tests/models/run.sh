#!/usr/bin/env bash
# The real-model suite (see run.py): exports the models once into the cache, compiles each
# with kiln, runs it against ONNX Runtime and prints the table and "N passed, N failed,
# N skipped"; without FILTERs it also rewrites docs/models.md.
# Usage: tests/models/run.sh PATH/TO/kiln [FILTER...]
set -euo pipefail
if [ $# -lt 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 PATH/TO/kiln [FILTER...]" >&2
    exit 2
fi
KILN="$1"
shift
PY="${KILN_PY:-/root/.cache/kiln/venv/bin/python}"
exec "$PY" "$(dirname "${BASH_SOURCE[0]}")/run.py" --kiln "$KILN" "$@"
