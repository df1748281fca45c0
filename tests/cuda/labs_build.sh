#!/usr/bin/env bash
# Build check of the CUDA sources that only a GPU machine runs (no GPU needed): the kernel
# tests (tests/cuda/*_gpu.cu, scripts/gpu-kernel-tests) and the labs and bundle harnesses of
# bench/gpu. Each is compiled with nvcc -Werror all-warnings -arch=compute_90a, host code and
# PTX (the sm_90a paths, wgmma and clusters included; no ptxas), so that a runtime change that
# breaks one of them fails here and not on the GPU machine's next call. -arch as the sources'
# own builds use it: with -gencode arch=compute_90a,code=... the host pass does not report a
# device helper that only sm_90a code calls (wgconv_lab.cu's mbarrier helpers passed that way
# and failed -arch=sm_90a); -Xcicc -O0: the front end's checks without cicc's optimizer (conv_gpu.cu
# 40 -> 8 s). The harnesses
# that open a bundle are compiled against the digits example's CUDA bundle under the name
# each one expects: bundle_main.h's (pdl_same.cu, int8_time.cu) by -DB=NAME -include NAME.h,
# bert_ncu.cu's bb0/bb0.h; fallback_ops_main.cu against the segmentation head that
# bench/gpu/fallback_ops.sh prepares (its outputs are that model's).
# usage: tests/cuda/labs_build.sh KILN [WORK_DIR]; ends with "N passed, N failed".
set -u
KILN=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
if [ -n "${2:-}" ]; then WORK=$2; else WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT; fi
JOBS=${KILN_JOBS:-2}
NVCC=${NVCC:-nvcc}
mkdir -p "$WORK/logs"
export GEN="-std=c++17 -arch=compute_90a -Xcicc -O0 -Werror all-warnings -c"

# the bundles the harnesses include: the digits model as dg (bundle_main.h) and bb0, and
# fallback_ops.sh's model (one kiln for both of its bundles)
if ! bash "$ROOT/bench/gpu/fallback_ops.sh" prepare "$KILN" "$KILN" "$WORK/seg" \
    >"$WORK/logs/fallback_ops.log" 2>&1; then
    cat "$WORK/logs/fallback_ops.log"
    echo "0 passed, 1 failed"
    exit 1
fi
for name in dg bb0; do
    dir="$WORK/b/$name"
    [ "$name" = bb0 ] && dir="$WORK/b/bb0/bb0"
    rm -rf "$dir"
    if ! "$KILN" compile "$ROOT/examples/digits/digits.onnx" --target cuda --name "$name" \
        -o "$dir" >"$WORK/logs/kiln-$name.log" 2>&1; then
        cat "$WORK/logs/kiln-$name.log"
        echo "0 passed, 1 failed"
        exit 1
    fi
done

# one line per source: NAME|SOURCE|extra flags
jobs_list() {
    local f
    for f in "$ROOT"/tests/cuda/*_gpu.cu; do
        echo "$(basename "$f" .cu)|$f|-I $ROOT/runtime/cuda -I $ROOT/tests/cuda"
    done
    for f in "$ROOT"/bench/gpu/*.cu; do
        local n flags="-I $ROOT/runtime/cuda -I $ROOT/tests/cuda -I $ROOT/bench/gpu"
        n=$(basename "$f" .cu)
        case $n in
        pdl_same | int8_time)
            flags="$flags -DB=dg -DPN=DG_PROFILE_NODES -include $WORK/b/dg/dg.h -I $WORK/b/dg" ;;
        bert_ncu) flags="$flags -I $WORK/b/bb0" ;;
        fallback_ops_main) flags="$flags -I $WORK/seg/after" ;;
        esac
        echo "$n|$f|$flags"
    done
}

build_one() {
    local n=${1%%|*} rest=${1#*|}
    local src=${rest%%|*} flags=${rest#*|}
    # shellcheck disable=SC2086
    if "$NVCC" $GEN $flags -o "$WORK/$n.o" "$src" >"$WORK/logs/$n.log" 2>&1; then
        echo "ok   $n"
    else
        echo "FAIL $n: $src"
        head -n 8 "$WORK/logs/$n.log"
    fi
}
export -f build_one
export NVCC WORK
# xargs runs JOBS builds at a time
jobs_list | xargs -P "$JOBS" -I{} bash -c 'build_one "$1"' _ {} |
    tee "$WORK/summary.log"
passed=$(grep -c '^ok ' "$WORK/summary.log")
failed=$(grep -c '^FAIL ' "$WORK/summary.log")
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
