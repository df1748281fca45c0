#!/usr/bin/env bash
# The CPU benchmark (issue 14): the Kiln C bundle against ONNX Runtime and OpenVINO on
# ResNet-50, MobileNetV2, EfficientNet-B0, BERT-base (sequence 128) and ViT-B/16, one thread
# and all cores, in one run on this machine; writes bench/cpu/results.json and generates
# docs/cpu-bench.md from it (bench/cpu/report.py). How it measures: bench/cpu/bench.py.
# Usage: bench/cpu/run.sh [bench.py options: --reps N --warmup N --models A,B ...]
# Needs: build/kiln (or KILN=...), cmake and a C compiler, Debian's python3-torch and
# python3-torchvision (the exports, cached in ~/.cache/kiln/models), and PyPI for the bench
# venv (made once, ~/.cache/kiln/bench-venv).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
KILN="${KILN:-$ROOT/build/kiln}"
VENV="${KILN_BENCH_VENV:-$HOME/.cache/kiln/bench-venv}"
REQ="$ROOT/bench/cpu/requirements.txt"

[ -x "$KILN" ] || { echo "run.sh: $KILN not built (cmake -S . -B build && cmake --build build)" >&2; exit 2; }
# the venv from the suite's venv python (or python3), re-installed when the pins change
if [ ! -x "$VENV/bin/python" ] || ! cmp -s "$REQ" "$VENV/.kiln-bench-requirements"; then
    PY="${KILN_PY:-$HOME/.cache/kiln/venv/bin/python}"
    [ -x "$PY" ] || PY=python3
    "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q -r "$REQ"
    cp "$REQ" "$VENV/.kiln-bench-requirements"
fi
"$VENV/bin/python" "$ROOT/bench/cpu/bench.py" --kiln "$KILN" --out "$ROOT/bench/cpu/results.json" "$@"
"$VENV/bin/python" "$ROOT/bench/cpu/report.py" "$ROOT/bench/cpu/results.json" "$ROOT/docs/cpu-bench.md"
