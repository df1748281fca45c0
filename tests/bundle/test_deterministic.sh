#!/usr/bin/env bash
# Compiling the same model twice gives byte-identical bundles (diff -r), with binary and with
# embedded weights; and the bundle names no path of the folder it was written to.
# Usage: test_deterministic.sh PATH/TO/kiln
. "$(dirname "$0")/lib.bash"

for model in eltwise other conv minimal; do
    for weights in bin embed; do
        a="$TMP/first/$model-$weights" b="$TMP/second/$model-$weights"
        mkdir -p "$TMP/first" "$TMP/second"
        if ! compile_model "$model" "$a" --weights "$weights" >/dev/null ||
            ! compile_model "$model" "$b" --weights "$weights" >/dev/null; then
            fail "$model ($weights weights): kiln compile"
            continue
        fi
        check "$model ($weights weights): two compilations give identical bundles (diff -r)" \
            diff -r "$a" "$b"
        check "$model ($weights weights): the bundle does not mention its output folder" \
            bash -c "! grep -rl -- '$TMP/first' '$a'"
    done
done
finish
