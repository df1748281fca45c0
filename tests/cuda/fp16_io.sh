#!/usr/bin/env bash
# kiln compile --target cuda --precision fp16 --fp16-io: the float32 graph inputs and
# outputs are float16 in the bundle's API, so no Cast kernel runs at the ends; a float32
# node that reads an input still gets its Cast, an output that a float32 node writes gets
# one to float16, and values a subgraph reads stay float32; the option needs --precision
# fp16. No GPU needed (read from the bundle); scripts/gpu-check runs such bundles
# (gpu-prepare --fp16-io). usage: tests/cuda/fp16_io.sh KILN; ends with "N passed, N failed".
set -u
KILN=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${KILN_PYTHON:-/root/.cache/kiln/venv/bin/python}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0 failed=0
check() { # DESCRIPTION COMMAND...
    local what=$1; shift
    if "$@"; then echo "ok   $what"; passed=$((passed + 1))
    else echo "FAIL $what"; failed=$((failed + 1)); fi
}
"$PY" "$HERE/make_models.py" "$TMP/m" >/dev/null
compile() { # MODEL OUT EXTRA...
    local m=$1 o=$2; shift 2
    "$KILN" compile "$TMP/m/$m.onnx" -o "$TMP/$o" --name m --target cuda --precision fp16 "$@" \
        >/dev/null 2>"$TMP/$o.err"
}
casts() { grep -c '"Cast ' "$TMP/$1/m.cu"; }
# cuda_cnn: Conv ... Softmax, all with float16 kernels
compile cuda_cnn cnn32 && compile cuda_cnn cnn16 --fp16-io
check "cnn: float32 API without the option" grep -q "const float \*x; /\* f32\[2,3,17,17\]" "$TMP/cnn32/m.h"
check "cnn: input float16 with --fp16-io" grep -q "const uint16_t \*x; /\* f16\[2,3,17,17\] 'x'" "$TMP/cnn16/m.h"
check "cnn: output float16 under its name" grep -q "uint16_t \*prob; /\* f16\[2,10\] 'prob'" "$TMP/cnn16/m.h"
check "cnn: two boundary Casts without the option" test "$(casts cnn32)" -eq 2
check "cnn: no Cast with --fp16-io" test "$(casts cnn16)" -eq 0
# cuda_generic: a subgraph reads x (it stays float32); float32 (generic) nodes write outputs
compile cuda_generic gen16 --fp16-io
check "generic: an input a subgraph reads stays float32" grep -q "const float \*x; /\* f32\[4,6\]" "$TMP/gen16/m.h"
check "generic: float outputs are float16" test "$(grep -c "uint16_t \*[a-z]*; /\* f16" "$TMP/gen16/m.h")" -ge 3
check "generic: an output a float32 node writes gets a Cast to float16" grep -q '"Cast rm.f16"' "$TMP/gen16/m.cu"
# the option is for --precision fp16
"$KILN" compile "$TMP/m/cuda_cnn.onnx" -o "$TMP/bad" --target cuda --fp16-io >/dev/null 2>"$TMP/bad.err"
r=$?
check "without --precision fp16: a usage error (exit 2), no folder" \
    bash -c "[ $r -eq 2 ] && grep -q -- '--fp16-io is for --target cuda --precision fp16' '$TMP/bad.err' && [ ! -e '$TMP/bad' ]"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
