#!/usr/bin/env bash
# Per-layer profile of Kiln's int8 bundle of a suite model, one thread: kiln calibrate
# (minmax, 8 seeded random samples as bench/int8/run.sh), kiln compile --int8, the bundle
# built with cc $OPT (default -O2) -march=native and bench/int8/kprof.h, which times every int8 kernel
# call; prints the sum per class (depthwise, 1x1, kxk convolutions, GEMM, the rest) with
# GMAC/s, then each node, slowest first, and bench_main's median for the whole run.
# Usage: bench/int8/profile.sh [PATH/TO/kiln] [MODEL: resnet50|mobilenet_v2|...] [RUNS]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
KILN="${1:-$ROOT/build/kiln}"
NAME="${2:-resnet50}"
RUNS="${3:-3}"
CC="${CC:-cc}"
# OPT: the optimization flags of the bundle build (issue 13: -O3 against -O2).
OPT="${OPT:--O2}"
# KEEP: a folder to keep the calibrated bundle in (to rebuild it, or objdump it), else a temp one.
KEEP="${KEEP:-}"
PY="${KILN_PY:-/root/.cache/kiln/venv/bin/python}"
. "$ROOT/bench/int8/lib.sh"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

model="$(int8_model "$NAME")"
int8_samples "$WORK/cal"
"$KILN" calibrate "$model" --data "$WORK/cal" --method minmax -o "$WORK/q.qparams" --quiet
dir="$WORK/b"
"$KILN" compile "$model" -o "$dir" --name bm --quiet --int8 "$WORK/q.qparams" >&2
"$CC" -std=c99 $OPT -march=native -D_POSIX_C_SOURCE=200809L -D_ISOC11_SOURCE -I"$dir" \
    -include "$ROOT/bench/int8/kprof.h" -include "$dir/bm.h" -DBENCH_NAME=bm -DBENCH_ALIGN=BM_ALIGN \
    -DBENCH_WEIGHTS_SIZE=BM_WEIGHTS_SIZE -DBENCH_ARENA_SIZE=BM_ARENA_SIZE \
    -DBENCH_INPUT_ELEMS=150528 -DBENCH_OUTPUT_ELEMS=1000 -Dlogits=output \
    "$ROOT/bench/passes/bench_main.c" "$dir/bm.c" -o "$dir/bench" -lm
"$dir/bench" "$dir/bm_weights.bin" "$RUNS" | sed -n 's/.*median_ms=\([0-9.]*\).*/whole run: median \1 ms/p; /^kprof/p'
[ -z "$KEEP" ] || { rm -rf "$KEEP"; cp -r "$dir" "$KEEP"; }
echo "model $NAME; opt $OPT; cc: $("$CC" --version | head -n 1); one thread; int8 path: -march=native"
