#!/usr/bin/env bash
# Kernel lab A/B of runtime/rt_pgemm.h: builds bench/kernels/pgemm.c with this tree's
# kernel and, as its peer, the kernel of git revision REV (default HEAD: the last commit,
# so that uncommitted work is measured against it), both at -O3 -march=native, and runs
# them alternating in one process (bench/kernels/pgemm.c says how it times).
# Usage: bench/kernels/pgemm_ab.sh [REV] [pgemm args: shape-name filter]
set -eu
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
REV="${1:-HEAD}"
shift || true
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/peer"
git -C "$ROOT" archive "$REV" runtime | tar -x -C "$TMP/peer"
CC="${CC:-cc}"
FLAGS="-O3 -march=native -std=gnu11 -Wall -Wextra"
"$CC" $FLAGS -I"$TMP/peer" -c "$ROOT/bench/kernels/pgemm_peer.c" -o "$TMP/peer.o"
"$CC" $FLAGS -DPGEMM_PEER -I"$ROOT" -c "$ROOT/bench/kernels/pgemm.c" -o "$TMP/pgemm.o"
"$CC" "$TMP/pgemm.o" "$TMP/peer.o" -o "$TMP/pgemm" -lm
echo "peer: $REV ($(git -C "$ROOT" rev-parse --short "$REV")); this tree: $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet -- runtime || echo ' + uncommitted runtime changes')"
"$TMP/pgemm" "$@"
