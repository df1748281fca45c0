#!/usr/bin/env bash
# A/B of the int8 bundles of one suite model built by two (or more) kilns (e.g. this tree's
# and an older commit's): one calibration (kiln calibrate minmax, the 8 seeded samples of
# lib.sh, by the first kiln), each kiln's bundle built with cc $OPT (default -O3)
# -march=native and bench/int8/same_main.c, then RUNS rounds in which every program runs
# 5 timed runs in turn (thread CPU time, median of the 5); prints per program the median and
# minimum over the rounds, and whether the outputs are byte-identical. Kiln against Kiln
# only: quicker than run.sh (no fp32, no ONNX Runtime) where a kernel change is the question.
# Usage: [NAME=mobilenet_v2] [RUNS=15] [OPT=-O3] bench/int8/ab.sh KILN_A KILN_B [KILN_C...]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CC="${CC:-cc}"
PY="${KILN_PY:-/root/.cache/kiln/venv/bin/python}"
. "$ROOT/bench/int8/lib.sh"
NAME="${NAME:-mobilenet_v2}"
RUNS="${RUNS:-15}"
OPT="${OPT:--O3}"
[ $# -ge 2 ] || { echo "usage: $0 KILN_A KILN_B [KILN_C...]" >&2; exit 2; }
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
model="$(int8_ab_calibrate "$1")"
n=0
for k in "$@"; do
    "$k" compile "$model" -o "$W/b$n" --name bm --quiet --int8 "$W/q.qparams" >&2
    int8_bench_cc "$W/b$n" "$W/b$n/bench" $OPT -march=native
    n=$((n + 1))
done
for _ in $(seq "$RUNS"); do
    line=""
    for i in $(seq 0 $((n - 1))); do
        line="$line $("$W/b$i/bench" "$W/b$i/bm_weights.bin" "$W/b$i/out.bin" 5 | sed -n 's/.*cpu_median_ms=\([0-9.]*\).*/\1/p')"
    done
    echo "$line"
done >"$W/times.txt"
"$PY" - "$W/times.txt" "$@" <<'PYEOF'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
for i, k in enumerate(sys.argv[2:]):
    col = [r[i] for r in rows]
    print(f"{k}: median {statistics.median(col):.3f} ms, min {min(col):.3f} ms")
PYEOF
for i in $(seq 1 $((n - 1))); do
    if cmp -s "$W/b0/out.bin" "$W/b$i/out.bin"; then echo "outputs: program $i writes the same bytes as program 0"; else echo "outputs: program $i DIFFERS from program 0"; fi
done
echo "model $NAME; opt $OPT; $RUNS rounds x 5 runs; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load average $(cut -d' ' -f1-3 /proc/loadavg)"
