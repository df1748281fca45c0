#!/usr/bin/env bash
# INT8 speed, one thread, one run (issue 13 item 7): Kiln int8 (kiln calibrate minmax on 8
# seeded random samples, kiln compile --int8) against Kiln fp32 and against ONNX Runtime's
# int8 (onnxruntime.quantization.quantize_static, QDQ, per-channel, the same samples) and
# fp32, on the model suite's ResNet-50 and MobileNetV2 (the export cache of tests/models;
# run tests/models/run.py once if they are missing). Kiln bundles are built with
# cc -O3 -march=native, as the bundle's own CMakeLists builds Release (at -O2 the float
# bundle runs 2.2x slower: ResNet-50 167 against 76 ms on the Zen 4 host, which made int8/fp32
# look better than it is), GNU C (the int8 kernels take the CPU's best path: AVX-512 VNNI or AVX-VNNI
# where the CPU has it, else AVX2) and timed by bench/int8/same_main.c (one run after a
# warm-up). Times are CPU time of the running thread (Kiln: CLOCK_THREAD_CPUTIME_ID; ONNX
# Runtime with one intra-op thread runs on the calling thread: time.thread_time), so that
# on a shared, loaded machine the time a run waits for a core is not counted. All
# contenders of a model take turns, one run each, RUNS rounds; the table gives the medians. With KILN_BEFORE=PATH/TO/other-kiln the int8 model is also built by
# that kiln (an older commit's kernels) and timed in the same run: a before/after column.
# Prints a table.
# Usage: [KILN_BEFORE=kiln] bench/int8/run.sh [PATH/TO/kiln] [RUNS]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
KILN="${1:-$ROOT/build/kiln}"
RUNS="${2:-10}"
CC="${CC:-cc}"
PY="${KILN_PY:-/root/.cache/kiln/venv/bin/python}"
. "$ROOT/bench/int8/lib.sh"
BEFORE="${KILN_BEFORE:-}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

int8_samples "$WORK/cal"

kiln_build() { # KILN MODEL NAME [kiln compile options] -> the bench program's path
    local kiln="$1" model="$2" name="$3" dir="$WORK/$3"
    shift 3
    "$kiln" compile "$model" -o "$dir" --name bm --quiet "$@" >&2
    int8_bench_cc "$dir" "$dir/bench" -O3 -march=native
    echo "$dir"
}

if [ -n "$BEFORE" ]; then
    echo "| model | Kiln fp32 ms | Kiln int8 ms | int8/fp32 | ORT fp32 ms | ORT int8 ms | Kiln int8 / ORT int8 | Kiln int8 before ms | before / now |"
    echo "|---|---|---|---|---|---|---|---|---|"
else
    echo "| model | Kiln fp32 ms | Kiln int8 ms | int8/fp32 | ORT fp32 ms | ORT int8 ms | Kiln int8 / ORT int8 |"
    echo "|---|---|---|---|---|---|---|"
fi
for name in resnet50 mobilenet_v2; do
    model="$(int8_model "$name")"
    "$KILN" calibrate "$model" --data "$WORK/cal" --method minmax -o "$WORK/$name.qparams" --quiet
    dirs=("$(kiln_build "$KILN" "$model" "$name-fp32")"
          "$(kiln_build "$KILN" "$model" "$name-int8" --int8 "$WORK/$name.qparams")")
    [ -z "$BEFORE" ] || dirs+=("$(kiln_build "$BEFORE" "$model" "$name-int8-before" --int8 "$WORK/$name.qparams")")
    # The contenders take turns, one timed run each per round (a Kiln program after its own
    # warm-up run), so that a busy spell of a shared machine falls on all of them alike.
    "$PY" - "$model" "$WORK/cal" "$WORK/$name.int8.onnx" "$RUNS" "$name" "${dirs[@]}" <<'PY'
import glob, re, subprocess, sys, time
import numpy as np
import onnxruntime as ort
ort.set_default_logger_severity(3)
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
model, cal, out, runs, label, dirs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6:]
name = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).get_inputs()[0].name
class Reader(CalibrationDataReader):
    def __init__(self):
        self.files = iter(sorted(glob.glob(f"{cal}/*.npy")))
    def get_next(self):
        f = next(self.files, None)
        return None if f is None else {name: np.load(f)}
quantize_static(model, out, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
x = {name: np.load(sorted(glob.glob(f"{cal}/*.npy"))[0])}
def session(path):
    o = ort.SessionOptions()
    o.intra_op_num_threads = 1
    o.inter_op_num_threads = 1
    s = ort.InferenceSession(path, o, providers=["CPUExecutionProvider"])
    s.run(None, x)
    return s
def ort_ms(s):
    t0 = time.thread_time()
    s.run(None, x)
    return (time.thread_time() - t0) * 1e3
def kiln_ms(d):
    r = subprocess.run([f"{d}/bench", f"{d}/bm_weights.bin", f"{d}/out.bin", "1"], check=True, capture_output=True, text=True)
    return float(re.search(r"cpu_median_ms=([0-9.]+)", r.stdout).group(1))
o32, o8 = session(model), session(out)
t = {k: [] for k in ["k32", "k8", "kb", "o32", "o8"]}
for _ in range(runs):
    t["k32"].append(kiln_ms(dirs[0]))
    t["o32"].append(ort_ms(o32))
    t["k8"].append(kiln_ms(dirs[1]))
    t["o8"].append(ort_ms(o8))
    if len(dirs) > 2:
        t["kb"].append(kiln_ms(dirs[2]))
m = {k: float(np.median(v)) for k, v in t.items() if v}
row = f"| {label} | {m['k32']:.2f} | {m['k8']:.2f} | {m['k8'] / m['k32']:.2f}x | {m['o32']:.2f} | {m['o8']:.2f} | {m['k8'] / m['o8']:.2f}x"
if "kb" in m:
    row += f" | {m['kb']:.2f} | {m['kb'] / m['k8']:.2f}x"
print(row + " |")
PY
done
echo
echo "cc: $("$CC" --version | head -n 1); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); one thread; CPU time, median of $RUNS rounds, the contenders in turn; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
