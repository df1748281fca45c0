#!/usr/bin/env bash
# Two kilns' int8 bundles of a suite model, side by side: the same .qparams (kiln calibrate
# minmax on bench/int8/run.sh's 8 seeded samples, by the first kiln), each kiln's bundle built
# with cc -O2 -march=native, run once on the same input; checks the outputs are the same
# bytes (cmp) and counts each bundle's instructions for that one run under callgrind
# (repeatable on a shared machine, unlike wall-clock time). With ICOUNT=0 only the bytes.
# ICOUNT_KEEP=DIR keeps the work folder (bundles, callgrind files) there.
# Usage: bench/int8/icount.sh BEFORE_KILN AFTER_KILN [MODEL: resnet50|mobilenet_v2|...]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
A="$1"
B="$2"
NAME="${3:-mobilenet_v2}"
CC="${CC:-cc}"
PY="${KILN_PY:-/root/.cache/kiln/venv/bin/python}"
. "$ROOT/bench/int8/lib.sh"
WORK="$(mktemp -d)"
trap '[ -n "${ICOUNT_KEEP:-}" ] && cp -r "$WORK" "$ICOUNT_KEEP"; rm -rf "$WORK"' EXIT

model="$(int8_model "$NAME")"
int8_samples "$WORK/cal"
"$A" calibrate "$model" --data "$WORK/cal" --method minmax -o "$WORK/q.qparams" --quiet
for side in A B; do
    kiln="${!side}" dir="$WORK/$side"
    "$kiln" compile "$model" -o "$dir" --name bm --quiet --int8 "$WORK/q.qparams" 2>/dev/null
    int8_bench_cc "$dir" "$dir/run" -std=c99 -O2 -march=native
    "$dir/run" "$dir/bm_weights.bin" "$dir/out.bin"
done
cmp "$WORK/A/out.bin" "$WORK/B/out.bin"
echo "$NAME: outputs identical ($(wc -c < "$WORK/A/out.bin") bytes)"
[ "${ICOUNT:-1}" = 0 ] && exit 0
for side in A B; do
    dir="$WORK/$side"
    valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" "$dir/run" "$dir/bm_weights.bin" "$dir/cg.bin" 2>"$dir/cg.log"
    cmp "$dir/out.bin" "$dir/cg.bin"
    grep -o 'Collected : [0-9]*' "$dir/cg.log" | awk '{print $3}' > "$dir/ir"
done
awk -v n="$NAME" -v a="$(cat "$WORK/A/ir")" -v b="$(cat "$WORK/B/ir")" \
    'BEGIN { printf "%s: instructions, one run: before %.1f M, after %.1f M, after/before %.3f\n", n, a / 1e6, b / 1e6, b / a }'
