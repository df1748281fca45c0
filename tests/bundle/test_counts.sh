#!/usr/bin/env bash
# Outputs of data-dependent size (docs/bundle.md): NonZero, Unique, Compress and
# NonMaxSuppression outputs that are graph outputs with undeclared sizes compile to an upper
# bound; on inputs whose counts fall below it, NAME_outputs' FIELD_count fields get the
# run-time counts (the test main prints them), the entries before the count match ONNX Runtime
# and the entries past it hold the fill (-1 for indices, 0 for data and counts). A NonZero that
# a node inside the graph reads must fill its bound: a smaller count is NAME_ERR_SHAPE (4).
# Models: tests/bundle/counts.py. Usage: test_counts.sh PATH/TO/kiln
. "$(dirname "$0")/lib.bash"

CM="$TMP/count_models"
"$PY" "$ROOT/tests/bundle/counts.py" models "$CM" || { fail "counts.py models"; finish; }

# build MODEL: compiles MODEL.onnx and builds its test main with the strict, sanitized flags.
build() {
    local m="$1" d="$TMP/$1"
    "$KILN" compile "$CM/$m.onnx" -o "$d" --name "$m" --test-main >"$TMP/compile.log" 2>&1 &&
        gcc $STRICT $SAN_FLAGS -I"$d" "$d/$m.c" "$d/${m}_test_main.c" -o "$d/run" -lm \
            >>"$TMP/compile.log" 2>&1
}
counts() { "$PY" "$ROOT/tests/bundle/counts.py" "$@"; }

for m in nonzero unique compress nms; do
    if ! build "$m"; then
        fail "$m: compile and build"
        sed 's/^/    /' "$TMP/compile.log"
        continue
    fi
    pass "$m: compiles to an upper bound and builds with gcc $STRICT, sanitizers"
    check "$m: header declares a count field the conformance runner's regex skips" \
        grep -Eq "int64_t \*[a-z]+_count; /\* count of '[a-z]+' along axis [0-9]+" "$TMP/$m/$m.h"
    for i in 1 2 3; do
        check "$m: count below the bound: count, entries and fill right (draw $i)" \
            counts check --exe "$TMP/$m/run" --weights "$TMP/$m/${m}_weights.bin" \
            --model "$CM/$m.onnx" --work "$TMP/work"
    done
done
if command -v clang >/dev/null; then
    check "nonzero: builds with clang $STRICT" \
        clang $STRICT -I"$TMP/nonzero" "$TMP/nonzero/nonzero.c" "$TMP/nonzero/nonzero_test_main.c" \
        -o "$TMP/nonzero/run-clang" -lm
fi
check "nonzero: a count that reaches the bound" \
    counts check --exe "$TMP/nonzero/run" --weights "$TMP/nonzero/nonzero_weights.bin" \
    --model "$CM/nonzero.onnx" --work "$TMP/work" --full
check "nonzero: the count field is required (NULL is NONZERO_ERR_NULL)" \
    grep -q "|| !out->y_count" "$TMP/nonzero/nonzero.c"

m=nonzero_inside
if build $m; then
    pass "$m: compiles and builds"
    check "$m: a Transpose reads the NonZero: a full count runs" \
        counts check --exe "$TMP/$m/run" --weights "$TMP/$m/${m}_weights.bin" \
        --model "$CM/$m.onnx" --work "$TMP/work" --full
    check "$m: a count below the bound is NONZERO_INSIDE_ERR_SHAPE" \
        counts status --exe "$TMP/$m/run" --weights "$TMP/$m/${m}_weights.bin" \
        --model "$CM/$m.onnx" --work "$TMP/work" --want 4
    check "$m: no count field (the graph output is the Transpose's)" \
        bash -c "! grep -q _count '$TMP/$m/$m.h'"
else
    fail "$m: compile and build"
    sed 's/^/    /' "$TMP/compile.log"
fi
finish
