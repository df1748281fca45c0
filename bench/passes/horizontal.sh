#!/usr/bin/env bash
# fuse-horizontal on the C backend, in one run: compiles a model twice, all passes and all
# passes but fuse-horizontal, builds both with bench/passes/bench_main.c (-O2 and $CFLAGS)
# and either times them in interleaved rounds (off, on, off, on...: both see the same
# machine state; per round each median and the ratio, then the median ratio) or, with
# CALLGRIND=1, counts each one's instructions under valgrind's callgrind (one warm-up and one
# timed run each: repeatable where timings on a shared machine are not). Also prints node
# counts and output checksums (equal up to float rounding). BENCH_FLAGS are bench_main.c's
# -D switches for the model's fields.
# Usage: bench/passes/horizontal.sh KILN MODEL.onnx "BENCH_FLAGS" [RUNS] [ROUNDS]
#   one BERT-base layer (bench/passes/encoder_layer.py), instructions:
#     CALLGRIND=1 bench/passes/horizontal.sh build/kiln layer.onnx \
#         "-DBENCH_INPUT_ELEMS=98304 -DBENCH_OUTPUT_ELEMS=98304"
#   bench/gpu's BERT-base (bench/gpu/prepare.py exports it), time:
#     KILN_DIMS="--dim batch=1" bench/passes/horizontal.sh build/kiln bert_base.onnx \
#         "-DBENCH_SEQ=128 -DBENCH_VOCAB=30522 -DBENCH_OUTPUT_ELEMS=2" 3 5
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
if [ $# -lt 3 ]; then
    sed -n '2,18p' "$0" >&2
    exit 2
fi
KILN="$1" ONNX="$2" FLAGS="$3" RUNS="${4:-5}" ROUNDS="${5:-5}"
CC="${CC:-cc}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# shellcheck disable=SC2086 # KILN_DIMS, CFLAGS and FLAGS are lists of switches
for v in on off; do
    extra=()
    [ "$v" = off ] && extra=(--no-pass=fuse-horizontal)
    "$KILN" compile "$ONNX" -o "$WORK/$v" --name m ${KILN_DIMS:-} "${extra[@]}" >"$WORK/$v.log" 2>&1
    "$CC" -std=c99 -O2 ${CFLAGS:-} -D_POSIX_C_SOURCE=200809L -D_ISOC11_SOURCE -I"$WORK/$v" \
        -include "$WORK/$v/m.h" -DBENCH_NAME=m -DBENCH_ALIGN=M_ALIGN \
        -DBENCH_WEIGHTS_SIZE=M_WEIGHTS_SIZE -DBENCH_ARENA_SIZE=M_ARENA_SIZE \
        $FLAGS \
        "$ROOT/bench/passes/bench_main.c" "$WORK/$v/m.c" -lm -o "$WORK/$v/bench"
done
nodes() { sed -n 's/.*: \([0-9]*\) nodes (.*/\1/p' "$WORK/$1.log"; }
ms() { echo "$1" | sed -n 's/median_ms=\([0-9.]*\).*/\1/p'; }
if [ "${CALLGRIND:-0}" = 1 ]; then
    declare -A ir
    for v in off on; do
        OMP_NUM_THREADS=1 valgrind --tool=callgrind --callgrind-out-file="$WORK/$v.cg" \
            "$WORK/$v/bench" "$WORK/$v/m_weights.bin" 1 >"$WORK/$v.out" 2>"$WORK/$v.vg"
        ir[$v]="$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$WORK/$v.vg")"
    done
    echo "instructions (2 runs): off ${ir[off]}, on ${ir[on]}," \
        "on/off $(awk -v a="${ir[on]}" -v b="${ir[off]}" 'BEGIN { printf "%.6f", a / b }');" \
        "nodes: off $(nodes off), on $(nodes on); checksums off" \
        "$(sed 's/.*checksum=//' "$WORK/off.out"), on $(sed 's/.*checksum=//' "$WORK/on.out")"
    echo "model $(basename "$ONNX"); cc: $("$CC" --version | head -n 1); -O2 ${CFLAGS:-}"
    exit 0
fi
ratios=()
printf '%-6s %12s %12s %8s\n' round off-ms on-ms off/on
for r in $(seq 1 "$ROUNDS"); do
    off="$(OMP_NUM_THREADS=1 "$WORK/off/bench" "$WORK/off/m_weights.bin" "$RUNS")"
    on="$(OMP_NUM_THREADS=1 "$WORK/on/bench" "$WORK/on/m_weights.bin" "$RUNS")"
    ratio="$(awk -v a="$(ms "$off")" -v b="$(ms "$on")" 'BEGIN { printf "%.3f", a / b }')"
    ratios+=("$ratio")
    printf '%-6s %12s %12s %8s\n' "$r" "$(ms "$off")" "$(ms "$on")" "${ratio}x"
done
med="$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')"
echo "median off/on: ${med}x; nodes: off $(nodes off), on $(nodes on);" \
    "checksums off $(echo "$off" | sed 's/.*checksum=//'), on $(echo "$on" | sed 's/.*checksum=//')"
echo "model $(basename "$ONNX"); cc: $("$CC" --version | head -n 1); $(nproc) CPUs;" \
    "single thread (OMP_NUM_THREADS=1); -O2 ${CFLAGS:-}; $RUNS runs per median, $ROUNDS rounds"
