#!/usr/bin/env bash
# The product sites of cuBLASLt tuning (kc_blas.cuh's KcLtSite, docs/cuda.md): each
# kc_lt_matmul call of NAME_enqueue names its own slot, &ctx->lt_sites[i], i = 0..N-1 once
# each, N = NAME_LT_SITES (a site inside a loop, a grouped convolution's, is one slot); a
# model without products has NAME_LT_SITES 0 and still the tuning API; NAME_LT_MODEL, the
# identity a tuning cache is checked against, is the same when the model is compiled twice
# and differs between models and precisions. No GPU needed (scripts/gpu-tune-check runs
# tuning itself). usage: tests/cuda/tune_sites.sh KILN; ends with "N passed, N failed".
set -u
KILN=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${KILN_PYTHON:-/root/.cache/kiln/venv/bin/python}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0 failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }

"$PY" "$HERE/make_models.py" "$TMP" >/dev/null || { echo "make_models.py failed"; exit 1; }
build() { # MODEL PRECISION OUT
    "$KILN" compile "$TMP/$1.onnx" -o "$3" --name "$1" --target cuda --precision "$2" \
        >/dev/null 2>"$3.err"
}
model_id() { grep -o "_LT_MODEL 0x[0-9a-f]*" "$1" | cut -d' ' -f2; }

for m in cuda_qkv cuda_convs cuda_cnn cuda_eltwise; do
    out=$TMP/$m
    if ! build $m fp32 "$out"; then bad "$m: kiln compile: $(tail -2 "$out.err")"; continue; fi
    h=$out/$m.h cu=$out/$m.cu
    n=$(grep -o "_LT_SITES [0-9]*" "$h" | cut -d' ' -f2)
    calls=$(grep -c "kc_lt_matmul(" "$cu")
    slots=$(grep -o "kc_lt_matmul([^;]*&ctx->lt_sites\[[0-9]*\], ctx->lt_tuning)" "$cu" |
        grep -o "lt_sites\[[0-9]*\]" | tr -dc '0-9\n' | sort -n | uniq | tr '\n' ' ')
    want=$( [ "${n:-0}" -gt 0 ] && seq -s ' ' 0 $((n - 1)) )
    if [ -n "$n" ] && [ "$calls" -eq "$n" ] && [ "$slots" = "${want:+$want }" ] &&
        grep -q "_cuda_tune(" "$h" && grep -q "_cuda_load_tuning(" "$cu" &&
        grep -q "_ERR_TUNING 13" "$h"; then
        ok "$m: $n sites, one slot per kc_lt_matmul call, tuning API"
    else
        bad "$m: LT_SITES '$n', $calls calls, slots '$slots'"
    fi
done
[ "$(grep -o "_LT_SITES [0-9]*" "$TMP/cuda_eltwise/cuda_eltwise.h" | cut -d' ' -f2)" = 0 ] &&
    ok "cuda_eltwise: no products, LT_SITES 0" || bad "cuda_eltwise: LT_SITES not 0"

build cuda_qkv fp32 "$TMP/again" && a=$(model_id "$TMP/cuda_qkv/cuda_qkv.cu") &&
    b=$(model_id "$TMP/again/cuda_qkv.cu") && [ -n "$a" ] && [ "$a" = "$b" ] &&
    ok "cuda_qkv compiled twice: same LT_MODEL $a" || bad "cuda_qkv: LT_MODEL '$a' then '$b'"
build cuda_qkv fp16 "$TMP/half" && c=$(model_id "$TMP/half/cuda_qkv.cu") &&
    d=$(model_id "$TMP/cuda_convs/cuda_convs.cu") && [ "$c" != "$a" ] && [ "$d" != "$a" ] &&
    ok "LT_MODEL differs for fp16 ($c) and another model ($d)" ||
    bad "LT_MODEL not distinct: fp32 $a, fp16 '$c', cuda_convs '$d'"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
