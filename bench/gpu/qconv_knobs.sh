#!/usr/bin/env bash
# GPU machine: an A/B of kc_qconv.cuh's compile-time knobs on the kernel test alone, in one call.
# Builds tests/cuda/qconv_gpu.cu once a VARIANT (NAME:FLAGS, the flags -D knobs; all builds in
# parallel), then runs each with MODE (--timestem: the stem form's checks and its batch-256 time;
# --time: every case, then the ResNet-50 layer timings) for ROUNDS rounds, alternating variants,
# and prints one line a variant and round with its time lines and its "passed, failed" count.
# The FLAGS of a variant are split on spaces: "w8:-DKC_QSTEM_WARPS=8 -DKC_QSTEM_MINB=2".
# usage: bench/gpu/qconv_knobs.sh MODE "NAME:FLAGS;NAME:FLAGS;..." [ROUNDS (2)]
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MODE=$1 ROUNDS=${3:-2}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
IFS=';' read -ra VARS <<<"$2"
names=()
for v in "${VARS[@]}"; do
    name=${v%%:*} flags=${v#*:}
    [ "$name" = "$v" ] && flags=""
    names+=("$name")
    # shellcheck disable=SC2086 # the flags are words
    (nvcc -std=c++17 -O3 -arch=sm_90a -I "$ROOT/runtime/cuda" $flags -o "$W/$name" \
        "$ROOT/tests/cuda/qconv_gpu.cu" >"$W/$name.log" 2>&1 ||
        { echo "nvcc $name failed"; head -5 "$W/$name.log"; }) &
done
wait
for ((r = 1; r <= ROUNDS; r++)); do
    for name in "${names[@]}"; do
        [ -x "$W/$name" ] || continue
        echo "== $name round $r: $("$W/$name" "$MODE" 2>&1 | grep -E "^time|passed|^FAIL" | tr '\n' ' ')"
    done
done
