#!/usr/bin/env bash
# The multiply-add floors of this x86 CPU (bench/int8/floor.c): exact int8 sums on AVX2
# (vpmaddwd), the saturating vpmaddubsw sequence, fp32 FMA; one thread, one run.
# Usage: bench/int8/floor.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
"${CC:-cc}" -O2 -mavx2 -mfma "$ROOT/bench/int8/floor.c" -o "$W/floor"
"$W/floor"
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); ticks of the time-stamp counter"
