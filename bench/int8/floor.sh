#!/usr/bin/env bash
# The multiply-add floors of this x86 CPU (bench/int8/floor.c): exact int8 sums on AVX2
# (vpmaddwd), the saturating vpmaddubsw sequence, fp32 FMA, and where the CPU has AVX-512
# VNNI vpdpbusd (ymm, zmm) and zmm FMA; one thread, one run.
# Usage: bench/int8/floor.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
ISA="-mavx2 -mfma"
grep -q avx512_vnni /proc/cpuinfo && ISA="$ISA -mavx512f -mavx512bw -mavx512vnni"
"${CC:-cc}" -O2 $ISA "$ROOT/bench/int8/floor.c" -o "$W/floor"
"$W/floor"
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); thread CPU time, best of 60"
