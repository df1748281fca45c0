#!/usr/bin/env bash
# INT8 speed, one thread, one run (issue 13 item 7): Kiln int8 (kiln calibrate minmax on 8
# seeded random samples, kiln compile --int8) against Kiln fp32 and against ONNX Runtime's
# int8 (onnxruntime.quantization.quantize_static, QDQ, per-channel, the same samples) and
# fp32, on the model suite's ResNet-50 and MobileNetV2 (the export cache of tests/models;
# run tests/models/run.py once if they are missing). Kiln bundles are built with
# cc -O2 -march=native (the int8 kernels take the CPU's best path: AVX-512 VNNI or AVX-VNNI
# where the CPU has it, else AVX2) and timed by bench/passes/bench_main.c (median of RUNS
# after one warm-up). With KILN_BEFORE=PATH/TO/other-kiln the int8 model is also built by
# that kiln (an older commit's kernels) and timed in the same run: a before/after column.
# Prints a table.
# Usage: [KILN_BEFORE=kiln] bench/int8/run.sh [PATH/TO/kiln] [RUNS]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
KILN="${1:-$ROOT/build/kiln}"
RUNS="${2:-10}"
CC="${CC:-cc}"
PY="${KILN_PY:-/root/.cache/kiln/venv/bin/python}"
BEFORE="${KILN_BEFORE:-}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

find_model() {
    local m
    m="$(ls -t "$HOME"/.cache/kiln/models/*/"$1".onnx 2>/dev/null | head -n 1)"
    [ -n "$m" ] || { echo "no $1.onnx in ~/.cache/kiln/models: run tests/models/run.py first" >&2; exit 1; }
    echo "$m"
}

"$PY" - "$WORK/cal" <<'PY'
import os, sys
import numpy as np
os.makedirs(sys.argv[1])
rng = np.random.default_rng(20261125)
for i in range(8):
    np.save(f"{sys.argv[1]}/{i}.npy", rng.standard_normal((1, 3, 224, 224)).astype(np.float32))
PY

kiln_ms() { # KILN MODEL NAME [kiln compile options] -> median ms
    local kiln="$1" model="$2" name="$3" dir="$WORK/$3"
    shift 3
    "$kiln" compile "$model" -o "$dir" --name bm --quiet "$@" >&2
    "$CC" -std=c99 -O2 -march=native -D_POSIX_C_SOURCE=200809L -D_ISOC11_SOURCE -I"$dir" \
        -include "$dir/bm.h" -DBENCH_NAME=bm -DBENCH_ALIGN=BM_ALIGN \
        -DBENCH_WEIGHTS_SIZE=BM_WEIGHTS_SIZE -DBENCH_ARENA_SIZE=BM_ARENA_SIZE \
        -DBENCH_INPUT_ELEMS=150528 -DBENCH_OUTPUT_ELEMS=1000 -Dlogits=output \
        "$ROOT/bench/passes/bench_main.c" "$dir/bm.c" -o "$dir/bench" -lm
    "$dir/bench" "$dir/bm_weights.bin" "$RUNS" | sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p'
}

if [ -n "$BEFORE" ]; then
    echo "| model | Kiln fp32 ms | Kiln int8 ms | int8/fp32 | ORT fp32 ms | ORT int8 ms | Kiln int8 / ORT int8 | Kiln int8 before ms | before / now |"
    echo "|---|---|---|---|---|---|---|---|---|"
else
    echo "| model | Kiln fp32 ms | Kiln int8 ms | int8/fp32 | ORT fp32 ms | ORT int8 ms | Kiln int8 / ORT int8 |"
    echo "|---|---|---|---|---|---|---|"
fi
for name in resnet50 mobilenet_v2; do
    model="$(find_model "$name")"
    "$KILN" calibrate "$model" --data "$WORK/cal" --method minmax -o "$WORK/$name.qparams" --quiet
    k32="$(kiln_ms "$KILN" "$model" "$name-fp32")"
    k8="$(kiln_ms "$KILN" "$model" "$name-int8" --int8 "$WORK/$name.qparams")"
    kb=""
    [ -z "$BEFORE" ] || kb="$(kiln_ms "$BEFORE" "$model" "$name-int8-before" --int8 "$WORK/$name.qparams")"
    read -r o32 o8 < <("$PY" - "$model" "$WORK/cal" "$WORK/$name.int8.onnx" "$RUNS" <<'PY'
import glob, sys, time
import numpy as np
import onnxruntime as ort
ort.set_default_logger_severity(3)
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
model, cal, out, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
name = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).get_inputs()[0].name
class Reader(CalibrationDataReader):
    def __init__(self):
        self.files = iter(sorted(glob.glob(f"{cal}/*.npy")))
    def get_next(self):
        f = next(self.files, None)
        return None if f is None else {name: np.load(f)}
quantize_static(model, out, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
def median_ms(path):
    o = ort.SessionOptions()
    o.intra_op_num_threads = 1
    o.inter_op_num_threads = 1
    s = ort.InferenceSession(path, o, providers=["CPUExecutionProvider"])
    x = {name: np.load(sorted(glob.glob(f"{cal}/*.npy"))[0])}
    s.run(None, x)
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        s.run(None, x)
        t.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(t))
print(f"{median_ms(model):.2f} {median_ms(out):.2f}")
PY
)
    awk -v n="$name" -v k32="$k32" -v k8="$k8" -v o32="$o32" -v o8="$o8" -v kb="$kb" 'BEGIN {
        printf "| %s | %.2f | %.2f | %.2fx | %.2f | %.2f | %.2fx", n, k32, k8, k8 / k32, o32, o8, k8 / o8
        if (kb != "") printf " | %.2f | %.2fx", kb, kb / k8
        printf " |\n" }'
done
echo
echo "cc: $("$CC" --version | head -n 1); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); one thread; median of $RUNS runs"
