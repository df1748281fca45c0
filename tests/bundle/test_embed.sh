#!/usr/bin/env bash
# --weights embed writes NAME_weights.c instead of NAME_weights.bin; it builds strictly, and
# gives bit-for-bit the outputs of the bin build on the same random inputs (and both match
# ONNX Runtime). The embedded array holds the bytes of the .bin file.
# Usage: test_embed.sh PATH/TO/kiln
. "$(dirname "$0")/lib.bash"

SEED="${KILN_TEST_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}"
echo "seed $SEED"
for model in eltwise other conv minimal; do
    bin="$TMP/$model-bin" emb="$TMP/$model-embed"
    if ! compile_model "$model" "$bin" >/dev/null ||
        ! compile_model "$model" "$emb" --weights embed >/dev/null; then
        fail "$model: kiln compile"
        continue
    fi
    check "$model: embed writes ${model}_weights.c and no .bin" \
        test -f "$emb/${model}_weights.c" -a ! -e "$emb/${model}_weights.bin"
    check "$model: the embedded array holds the bytes of the .bin file" \
        "$PY" -c "
import re, sys
text = open('$emb/${model}_weights.c').read()
body = text[text.index('= {') + 3:text.rindex('};')]
got = bytes(int(x) for x in re.findall(r'\d+', body))
want = open('$bin/${model}_weights.bin', 'rb').read()
sys.exit(0 if got == want or (want == b'' and got == b'\0') else 1)"
    check "$model: embed bundle builds with gcc $STRICT" \
        gcc $STRICT -I"$emb" "$emb/$model.c" "$emb/${model}_weights.c" \
        "$emb/${model}_test_main.c" -o "$TMP/$model-embed.exe" -lm
    check "$model: bin bundle builds with gcc $STRICT" \
        gcc $STRICT -I"$bin" "$bin/$model.c" "$bin/${model}_test_main.c" -o "$TMP/$model-bin.exe" -lm
    check "$model: embed build matches ONNX Runtime" \
        run_compare "$TMP/$model-embed.exe" "$model" --weights none --seed "$SEED" \
        --keep "$TMP/out-embed-$model"
    check "$model: bin build matches ONNX Runtime" \
        run_compare "$TMP/$model-bin.exe" "$model" --weights "$bin/${model}_weights.bin" \
        --seed "$SEED" --keep "$TMP/out-bin-$model"
    check "$model: embed and bin outputs are bit-for-bit equal" \
        diff -r "$TMP/out-embed-$model" "$TMP/out-bin-$model"
done
finish
