#!/usr/bin/env bash
# GPU machine: times the bundles of bench/gpu/int8_prepare.py (ResNet-50 INT8 and fp16 at
# batch 1 and 256) with bench/gpu/int8_time.cu, in one run, two rounds alternating INT8 and
# fp16, and prints one JSON line per measurement and the INT8 / fp16 throughput ratios
# (median of the runs; the better round of two). Needs nvcc and python3.
# usage: bench/gpu/int8_run.sh DIR [ARCH (sm_90a)] [HARNESS (bench/gpu/int8_time.cu)]
set -u
DIR=$(realpath "$1")
ARCH=${2:-sm_90a}
HARNESS=$(realpath "${3:-$(dirname "$0")/int8_time.cu}")
keys=$(python3 -c "import json; print(' '.join(sorted(json.load(open('$DIR/index.json')))))")
for k in $keys; do
    d="$DIR/$k"
    w=$(python3 -c "import json; print(json.load(open('$DIR/index.json'))['$k']['weights'])")
    [ -f "$d/${k}_weights.bin" ] || xz -dc "$DIR/weights/$w" >"$d/${k}_weights.bin"
    U=$(echo "$k" | tr a-z A-Z)
    [ -x "$d/time" ] && continue   # built already (nvcc on a machine without the GPU): run as is
    (cd "$d" && nvcc -std=c++17 -O3 -arch="$ARCH" -DB="$k" -DPN="${U}_PROFILE_NODES" -include "$k.h" \
        -I. -o time "$HARNESS" "$k.cu" -lcublasLt >build.log 2>&1 || { echo "nvcc $k failed"; head -5 build.log; }) &
done
wait
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
for round in 1 2; do
    for b in 1 256; do
        for p in int8 fp16; do
            k="r50_b${b}_$p"
            [ -x "$DIR/$k/time" ] || continue
            n=$(python3 -c "import json; print(json.load(open('$DIR/index.json'))['$k']['input_floats'])")
            runs=$([ "$b" = 1 ] && echo 300 || echo 20)
            r=$(cd "$DIR/$k" && ./time "${k}_weights.bin" "$n" "$runs")
            echo "{\"key\": \"$k\", \"round\": $round, \"result\": $r}"
        done
    done
done | tee "$DIR/results.jsonl"
python3 - "$DIR/results.jsonl" <<'PY'
import json, sys
best = {}
for line in open(sys.argv[1]):
    e = json.loads(line)
    k, ms = e["key"], e["result"]["median_ms"]
    best[k] = min(best.get(k, 1e30), ms)
for b in (1, 256):
    i, f = best.get(f"r50_b{b}_int8"), best.get(f"r50_b{b}_fp16")
    if i and f:
        print(f"ResNet-50 batch {b}: INT8 {i:.3f} ms ({b / i * 1000:.0f} img/s), fp16 {f:.3f} ms "
              f"({b / f * 1000:.0f} img/s): INT8/fp16 throughput {f / i:.2f}x")
PY
