#!/usr/bin/env bash
# The CPU benchmark (issue 14): the Kiln C bundle against ONNX Runtime and OpenVINO on
# ResNet-50, MobileNetV2, EfficientNet-B0, BERT-base (sequence 128) and ViT-B/16, one thread
# and all cores, in one run on this machine; writes bench/cpu/results.json and generates
# docs/cpu-bench.md from it (bench/cpu/report.py). How it measures: bench/cpu/bench.py.
# Usage: bench/cpu/run.sh [bench.py options: --reps N --warmup N --models A,B ...]
# With KILN_BEFORE=PATH/TO/older/kiln (and KILN_BEFORE_MODELS, default
# lstm,bert_tiny,efficientnet_b0,bert_base), it also times those models with the older kiln
# and again with this one (results-before.json, results-after.json), and the page gets a
# before/after section (KILN_BEFORE_LABEL names the older build, KILN_CHANGE the change); a
# run without KILN_BEFORE writes the page without it.
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
OUT="$ROOT/bench/cpu"
"$VENV/bin/python" "$OUT/bench.py" --kiln "$KILN" --out "$OUT/results.json" "$@"
if [ -n "${KILN_BEFORE:-}" ]; then
    M="${KILN_BEFORE_MODELS:-lstm,bert_tiny,efficientnet_b0,bert_base}"
    "$VENV/bin/python" "$OUT/bench.py" --kiln "$KILN_BEFORE" --label "${KILN_BEFORE_LABEL:-before}" \
        --models "$M" --out "$OUT/results-before.json" --work "$HOME/.cache/kiln/bench-cpu-before" \
        --one-thread
    "$VENV/bin/python" "$OUT/bench.py" --kiln "$KILN" --models "$M" --out "$OUT/results-after.json" \
        --one-thread
fi
if [ -n "${KILN_BEFORE:-}" ]; then
    "$VENV/bin/python" "$OUT/report.py" "$OUT/results.json" "$ROOT/docs/cpu-bench.md" \
        --before "$OUT/results-before.json" --after "$OUT/results-after.json" \
        --change "${KILN_CHANGE:-an older kiln against this one}"
else
    "$VENV/bin/python" "$OUT/report.py" "$OUT/results.json" "$ROOT/docs/cpu-bench.md"
fi
