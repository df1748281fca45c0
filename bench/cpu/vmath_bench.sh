#!/usr/bin/env bash
# Builds and runs bench/cpu/vmath_bench.c (libm against runtime/rt_vmath.h, ns per element)
# with the flags of the CPU benchmark's bundles: gcc -O3 -march=native.
# Usage: bench/cpu/vmath_bench.sh [CC]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CC="${1:-${CC:-cc}}"
BIN="$(mktemp -d)/vmath_bench"
trap 'rm -rf "$(dirname "$BIN")"' EXIT
"$CC" -std=c99 -O3 -march=native -I"$ROOT" -I"$ROOT/runtime" -o "$BIN" "$ROOT/bench/cpu/vmath_bench.c" -lm
"$BIN"
