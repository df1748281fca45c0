#!/usr/bin/env bash
# Pre-quantized models, one thread, one run (issue 13 item 3): the same QDQ model through
# Kiln's int8 kernels (passes/fold_qdq.c), through Kiln as float emulation (--no-pass=fold-qdq:
# what Kiln did before, DequantizeLinear/QuantizeLinear kernels around float ops) and through
# ONNX Runtime. Models: the model suite's resnet18_qdq (ONNX Runtime's quantize_static, QDQ,
# per-tensor weights; the issue's 542 ms against 23.5 ms) and ResNet-50 / MobileNetV2
# quantized here by quantize_static per-channel in QDQ and QOperator format (8 seeded
# samples). Kiln bundles at cc -O2 -march=native, timed by bench/passes/bench_main.c; ONNX
# Runtime with one intra-op thread; the three timed in turn, ROUNDS rounds of 3 runs, best
# run of each reported (this machine is shared: the best run is the least disturbed one, and
# taking them in turn exposes all three to the same load). Prints a table.
# Usage: bench/int8/prequant.sh [PATH/TO/kiln] [ROUNDS]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
KILN="${1:-$ROOT/build/kiln}"
ROUNDS="${2:-5}"
CC="${CC:-cc}"
PY="${KILN_PY:-/root/.cache/kiln/venv/bin/python}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

find_model() {
    local m
    m="$(ls -t "$HOME"/.cache/kiln/models/*/"$1".onnx 2>/dev/null | head -n 1)"
    [ -n "$m" ] || { echo "no $1.onnx in ~/.cache/kiln/models: run tests/models/run.py first" >&2; exit 1; }
    echo "$m"
}

kiln_build() { # MODEL NAME [kiln compile options] -> arena bytes; the bench in $WORK/NAME
    local model="$1" dir="$WORK/$2" arena
    shift 2
    arena="$("$KILN" compile "$model" -o "$dir" --name bm "$@" 2>&1 | sed -n 's/^arena: \([0-9]*\) bytes.*/\1/p')"
    "$CC" -std=c99 -O2 -march=native -D_POSIX_C_SOURCE=200809L -D_ISOC11_SOURCE -I"$dir" \
        -include "$dir/bm.h" -DBENCH_NAME=bm -DBENCH_ALIGN=BM_ALIGN \
        -DBENCH_WEIGHTS_SIZE=BM_WEIGHTS_SIZE -DBENCH_ARENA_SIZE=BM_ARENA_SIZE \
        -DBENCH_INPUT_ELEMS=150528 -DBENCH_OUTPUT_ELEMS=1000 -Dlogits=output \
        "$ROOT/bench/passes/bench_main.c" "$dir/bm.c" -o "$dir/bench" -lm
    echo "$arena"
}

# times ROUNDS KILN_DIR EMUL_DIR|- MODEL: Kiln int8, Kiln float emulation and ONNX Runtime
# (one intra-op thread) in turn, ROUNDS rounds of 3 runs each, so that a machine shared with
# other jobs slows all three alike; prints "kiln emul ort" as the best run of each (ms).
times() {
    "$PY" - "$@" <<'PY'
import subprocess, sys, time
import numpy as np
import onnxruntime as ort
ort.set_default_logger_severity(3)
rounds, kdir, edir, model = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
o = ort.SessionOptions()
o.intra_op_num_threads = 1
o.inter_op_num_threads = 1
s = ort.InferenceSession(model, o, providers=["CPUExecutionProvider"])
i = s.get_inputs()[0]
x = {i.name: np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype(np.float32)}
s.run(None, x)
def kiln(d):
    r = subprocess.run([f"{d}/bench", f"{d}/bm_weights.bin", "3"], check=True,
                       capture_output=True, text=True).stdout
    return float(r.split("min_ms=")[1].split()[0])
best = {"k": 1e30, "e": 1e30, "o": 1e30}
for _ in range(rounds):
    best["k"] = min(best["k"], kiln(kdir))
    if edir != "-":
        best["e"] = min(best["e"], kiln(edir))
    for _ in range(3):
        t0 = time.perf_counter()
        s.run(None, x)
        best["o"] = min(best["o"], (time.perf_counter() - t0) * 1e3)
print(f"{best['k']:.2f} {best['e'] if edir != '-' else '-'} {best['o']:.2f}")
PY
}

quantize() { # FLOAT OUT qdq|qop
    "$PY" - "$@" <<'PY'
import sys
import numpy as np
import onnxruntime as ort
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
src, out, fmt = sys.argv[1:]
name = ort.InferenceSession(src, providers=["CPUExecutionProvider"]).get_inputs()[0].name
class Reader(CalibrationDataReader):
    def __init__(self):
        self.rng, self.left = np.random.default_rng(20261125), 8
    def get_next(self):
        if not self.left:
            return None
        self.left -= 1
        return {name: self.rng.standard_normal((1, 3, 224, 224)).astype(np.float32)}
quantize_static(src, out, Reader(), per_channel=True, activation_type=QuantType.QUInt8,
                weight_type=QuantType.QInt8,
                quant_format=QuantFormat.QDQ if fmt == "qdq" else QuantFormat.QOperator)
PY
}

echo "| model | Kiln int8 ms | Kiln float emulation ms | ONNX Runtime ms | Kiln / ORT | arena int8 | arena emulation |"
echo "|---|---|---|---|---|---|---|"
row() { # LABEL MODEL
    local label="$1" model="$2" tag a8 ae="-" edir="-" k e o
    tag="$(echo "$label" | tr -c 'a-z0-9\n' '_')"
    a8="$(kiln_build "$model" "$tag-int8")"
    if [[ "$label" != *qop* ]]; then # QOperator ops have no kernels of their own
        ae="$(kiln_build "$model" "$tag-emul" --no-pass=lower-qoperator --no-pass=fold-qdq)"
        edir="$WORK/$tag-emul"
    fi
    read -r k e o < <(times "$ROUNDS" "$WORK/$tag-int8" "$edir" "$model")
    awk -v l="$label" -v k="$k" -v e="$e" -v o="$o" -v a8="$a8" -v ae="$ae" 'BEGIN {
        printf "| %s | %.2f | %s | %.2f | %.2fx | %.2f MB | %s |\n", l, k, e, o, k / o,
            a8 / 1e6, ae == "-" ? "-" : sprintf("%.2f MB", ae / 1e6) }'
}
row resnet18_qdq "$(find_model resnet18_qdq)"
for name in resnet50 mobilenet_v2; do
    for f in qdq qop; do
        quantize "$(find_model "$name")" "$WORK/$name.$f.onnx" "$f" 2>/dev/null
        row "$name ($f, per-channel)" "$WORK/$name.$f.onnx"
    done
done
echo
echo "cc: $("$CC" --version | head -n 1); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); one thread; best of $ROUNDS rounds of 3 runs, the three timed in turn"
