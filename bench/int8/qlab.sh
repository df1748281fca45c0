#!/usr/bin/env bash
# The int8 convolution kernel lab (bench/int8/qlab.c): A = this tree's runtime, B = the
# runtime of another tree (default: this one again), both at cc -O2 -march=native (the
# bench's flags), alternating per repetition; median thread CPU time of RUNS.
# OPT: the optimization flag (default -O2; the bundles' own build is -O3); QLAB_FIRST and
# QLAB_LAST (environment): a range of the lab's shapes (ResNet-50's: 0..9).
# Usage: [OPT=-O3] bench/int8/qlab.sh [B_TREE] [RUNS]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
B="${1:-$ROOT}"
RUNS="${2:-9}"
OPT="${OPT:--O2}"
CC="${CC:-cc}"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
"$CC" -std=c99 $OPT -march=native -c -DQLAB_IMPL -DQLAB_NAME=qlab_a -I"$ROOT" "$ROOT/bench/int8/qlab.c" -o "$W/a.o"
"$CC" -std=c99 $OPT -march=native -c -DQLAB_IMPL -DQLAB_NAME=qlab_b -I"$B" "$ROOT/bench/int8/qlab.c" -o "$W/b.o"
"$CC" -std=c99 -O2 "$ROOT/bench/int8/qlab.c" "$W/a.o" "$W/b.o" -o "$W/qlab"
"$W/qlab" "$RUNS"
echo "A: $ROOT, B: $B; cc $OPT -march=native; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load average $(cut -d' ' -f1-3 /proc/loadavg)"
