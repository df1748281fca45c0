#!/usr/bin/env bash
# Per-node A/B of two (or more) kilns' int8 bundles of one suite model: one calibration (as
# ab.sh), each bundle built with cc $OPT (default -O3) -march=native and bench/int8/kprof.h, then ROUNDS
# rounds in which the two programs take turns (RUNS runs each after a warm-up); per node (by
# the bundle's source line, which both kilns must emit alike) the minimum call time over all
# runs of a program, thread CPU time; prints the nodes whose B/A ratio of the minima moved the
# most, the sums per class, and the whole-run medians. Where a whole-model A/B (ab.sh) shows a
# change, this says which layers made it (kprof's wrapping changes GCC's inlining a little:
# read it beside ab.sh, not instead). An argument KILN:DIR takes that kiln's bundle with the
# rt_*.h of folder DIR in place of the bundle's copies (a runtime edit tried without a rebuild).
# Programs after B are compared with A as well (per class).
# Usage: [NAME=resnet50] [ROUNDS=7] [RUNS=3] [OPT=-O3] bench/int8/nodeab.sh KILN_A KILN_B [KILN_C...]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CC="${CC:-cc}"
PY="${KILN_PY:-/root/.cache/kiln/venv/bin/python}"
. "$ROOT/bench/int8/lib.sh"
NAME="${NAME:-resnet50}"
ROUNDS="${ROUNDS:-7}"
RUNS="${RUNS:-3}"
OPT="${OPT:--O3}"
[ $# -ge 2 ] || { echo "usage: $0 KILN_A KILN_B [KILN_C...]" >&2; exit 2; }
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
model="$(int8_ab_calibrate "$1")"
n=0
for k in "$@"; do
    d="$W/b$n"
    "${k%%:*}" compile "$model" -o "$d" --name bm --quiet --int8 "$W/q.qparams" >&2
    [ "$k" = "${k#*:}" ] || for h in "$d"/rt_*.h; do cp "${k#*:}/$(basename "$h")" "$h"; done
    "$CC" -std=c99 $OPT -march=native -D_POSIX_C_SOURCE=200809L -D_ISOC11_SOURCE -I"$d" \
        -include "$ROOT/bench/int8/kprof.h" -include "$d/bm.h" -DBENCH_NAME=bm -DBENCH_ALIGN=BM_ALIGN \
        -DBENCH_WEIGHTS_SIZE=BM_WEIGHTS_SIZE -DBENCH_ARENA_SIZE=BM_ARENA_SIZE \
        -DBENCH_INPUT_ELEMS=150528 -DBENCH_OUTPUT_ELEMS=1000 -Dlogits=output \
        "$ROOT/bench/passes/bench_main.c" "$d/bm.c" -o "$d/bench" -lm
    n=$((n + 1))
done
for r in $(seq "$ROUNDS"); do
    for i in $(seq 0 $((n - 1))); do
        KPROF_RAW=1 "$W/b$i/bench" "$W/b$i/bm_weights.bin" "$RUNS" | sed "s/^/$i /" >>"$W/raw.txt"
    done
done
"$PY" - "$W/raw.txt" "$n" <<'PYEOF'
import statistics, sys
N = int(sys.argv[2])
mins, geo, kind, whole = [{} for _ in range(N)], {}, {}, [[] for _ in range(N)]
for l in open(sys.argv[1]):
    f = l.split()
    i = int(f[0])
    if f[1] == "kprofraw":
        line = int(f[2]); kind[line] = f[3]; geo[line] = " ".join(f[6:])
        mins[i][line] = min(mins[i].get(line, 1e9), float(f[4]))
    elif f[1].startswith("median_ms="):
        whole[i].append(float(f[1].split("=")[1]))
lines = sorted(set(mins[0]) & set(mins[1]))
cls = {}
for ln in lines:
    c = cls.setdefault(kind[ln] + (" " + geo[ln].split(" ")[3] if kind[ln].startswith("conv") else ""), [0, 0])
    c[0] += mins[0][ln]; c[1] += mins[1][ln]
print("class (kind, kernel)        A ms (sum of minima)  B ms     B/A")
for c, (a, b) in sorted(cls.items(), key=lambda kv: -kv[1][0]):
    print(f"{c:28s} {a:8.3f} {b:8.3f}  {b / a:.3f}")
ta, tb = sum(mins[0][l] for l in lines), sum(mins[1][l] for l in lines)
print(f"{'all kernels':28s} {ta:8.3f} {tb:8.3f}  {tb / ta:.3f}")
print("whole run (median of the programs' medians): A %.3f ms, B %.3f ms" % (statistics.median(whole[0]), statistics.median(whole[1])))
for j in range(2, N):
    tj = sum(mins[j][l] for l in lines)
    print(f"program {j}: all kernels {tj:.3f} ms, /A {tj / ta:.3f}; " + ", ".join(
        f"{c} {sum(mins[j][l] for l in lines if (kind[l] + (' ' + geo[l].split(' ')[3] if kind[l].startswith('conv') else '')) == c) / a:.3f}"
        for c, (a, b) in sorted(cls.items(), key=lambda kv: -kv[1][0])[:3]))
print("nodes by B - A (largest moves first):")
for ln in sorted(lines, key=lambda l: -abs(mins[1][l] - mins[0][l]))[:16]:
    a, b = mins[0][ln], mins[1][ln]
    print(f"  line {ln:5d} {kind[ln]:9s} A {a:7.3f} B {b:7.3f} B/A {b / a:.3f}  {geo[ln]}")
PYEOF
echo "model $NAME; opt $OPT; $ROUNDS rounds x $RUNS runs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
