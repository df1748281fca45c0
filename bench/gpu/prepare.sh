#!/bin/sh
# Prepares the GPU benchmark on a machine with kiln and torch (no GPU): exports ResNet-50,
# MobileNetV2 and BERT-base at batch 1/32/256, compiles them with kiln --target cuda (fp32,
# fp16) into build/gpu-bench (weights xz-compressed, deduplicated; with nvcc here, also each
# bundle's shared library for run.py). Then, on the GPU machine:
#   python3 bench/gpu/run.py build/gpu-bench OUTDIR      (carry build/gpu-bench)
# and here: python3 bench/gpu/report.py OUTDIR/results.json bench/gpu/notes.md > docs/gpu-bench.md
# usage: bench/gpu/prepare.sh KILN [OUT] [MODEL...]
set -e
KILN=${1:?usage: bench/gpu/prepare.sh KILN [OUT] [MODEL...]}
OUT=${2:-build/gpu-bench}
[ $# -ge 2 ] && shift 2 || shift 1
PY=${PYTHON:-/usr/bin/python3}   # needs torch + torchvision (+ onnx export): Debian's has 1.13
"$PY" "$(dirname "$0")/prepare.py" "$KILN" "$OUT" "$@"
# the bundles' shared libraries, where nvcc is here (else run.py builds them there)
if command -v nvcc >/dev/null; then "$PY" "$(dirname "$0")/run.py" "$OUT" /tmp --prebuild; fi
