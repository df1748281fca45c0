#!/bin/sh
# Builds bench/kernels/dw.c against this tree's runtime (A) and B: the runtime of git
# revision REV if given, else this tree's built with RT_NO_VECTOR_EXT (the portable loops),
# and runs it. usage: bench/kernels/dw.sh [REV] [PEAK_GFLOPS] [GB_PER_S]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# GNU mode contracts a * b + c to FMAs, as the bundle's CMakeLists build (C99, extensions on)
flags="-std=gnu11 -O3 -march=native"
cc $flags -DDW_IMPL -DDW_NAME=dw_a -I"$root" -c "$root/bench/kernels/dw.c" -o "$work/a.o"
if [ -n "${1:-}" ]; then
    mkdir -p "$work/b/runtime"
    for f in $(git -C "$root" ls-tree --name-only "$1" runtime/); do
        case "$f" in *.h) git -C "$root" show "$1:$f" > "$work/b/$f" ;; esac
    done
    cc $flags -DDW_IMPL -DDW_NAME=dw_b -I"$work/b" -c "$root/bench/kernels/dw.c" -o "$work/b.o"
    echo "A: this tree, B: $1"
else
    cc $flags -DDW_IMPL -DDW_NAME=dw_b -DRT_NO_VECTOR_EXT -I"$root" -c "$root/bench/kernels/dw.c" \
        -o "$work/b.o"
    echo "A: this tree, B: this tree's portable loops (RT_NO_VECTOR_EXT)"
fi
cc $flags "$root/bench/kernels/dw.c" "$work/a.o" "$work/b.o" -o "$work/dw" -lm
"$work/dw" "${2:-96.8}" "${3:-20}"
