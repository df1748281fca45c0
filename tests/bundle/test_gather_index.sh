#!/usr/bin/env bash
# A Gather whose indices are a graph input (gather.onnx: table f32[5,3], idx i64[4]): valid
# indices (negative ones included) match ONNX Runtime; an index >= 5 or < -5 makes NAME_run
# return NAME_ERR_INDEX (3) instead of reading out of bounds (ASan build).
# Usage: test_gather_index.sh PATH/TO/kiln
. "$(dirname "$0")/lib.bash"

D="$TMP/gather"
if ! compile_model gather "$D" >"$TMP/compile.log" 2>&1; then
    fail "kiln compile gather.onnx (needs the C kernel of Gather)"
    sed 's/^/    /' "$TMP/compile.log"
    finish
fi
pass "kiln compile gather.onnx"
exe="$TMP/gather-san"
check "gather bundle builds with gcc $STRICT $SAN_FLAGS" \
    gcc $STRICT $SAN_FLAGS -I"$D" "$D/gather.c" "$D/gather_test_main.c" -o "$exe" -lm
W="$D/gather_weights.bin"
check "indices drawn from [-5, 5) match ONNX Runtime" \
    run_compare "$exe" gather --weights "$W" --int-range -5 5
check "indices drawn from [5, 1000) give GATHER_ERR_INDEX" \
    run_compare "$exe" gather --weights "$W" --int-range 5 1000 --expect-status 3
check "indices drawn from [-1000, -5) give GATHER_ERR_INDEX" \
    run_compare "$exe" gather --weights "$W" --int-range -1000 -5 --expect-status 3
check "indices far outside int32 give GATHER_ERR_INDEX" \
    run_compare "$exe" gather --weights "$W" --int-range 4294967296 4294967306 --expect-status 3
finish
