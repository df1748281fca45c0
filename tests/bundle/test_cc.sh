#!/usr/bin/env bash
# The generated C builds warning-free with gcc and clang at -std=c99 -Wall -Wextra -Werror
# -pedantic (bundle and test main), and with -O2 -fsanitize=address,undefined; every build
# runs on fresh random inputs and matches ONNX Runtime.
# Usage: test_cc.sh PATH/TO/kiln
. "$(dirname "$0")/lib.bash"

for model in eltwise other conv minimal; do
    B="$TMP/$model"
    if ! compile_model "$model" "$B" >"$TMP/compile.log" 2>&1; then
        fail "$model: kiln compile"
        sed 's/^/    /' "$TMP/compile.log"
        continue
    fi
    for cc in gcc clang; do
        exe="$TMP/$model-$cc"
        check "$model: $cc $STRICT builds the bundle and test main" \
            $cc $STRICT -I"$B" "$B/$model.c" "$B/${model}_test_main.c" -o "$exe" -lm
        [ -x "$exe" ] && check "$model: $cc build matches ONNX Runtime on random inputs" \
            run_compare "$exe" "$model" --weights "$B/${model}_weights.bin"
        exe="$TMP/$model-$cc-san"
        check "$model: $cc $STRICT $SAN_FLAGS builds" \
            $cc $STRICT $SAN_FLAGS -I"$B" "$B/$model.c" "$B/${model}_test_main.c" -o "$exe" -lm
        [ -x "$exe" ] && check "$model: $cc sanitizer build runs clean and matches ONNX Runtime" \
            run_compare "$exe" "$model" --weights "$B/${model}_weights.bin"
    done
done
finish
