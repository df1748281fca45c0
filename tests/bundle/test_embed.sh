#!/usr/bin/env bash
# --weights embed writes NAME_weights.c instead of NAME_weights.bin; it builds strictly, and
# gives bit-for-bit the outputs of the bin build on the same random inputs (and both match
# ONNX Runtime). The embedded array holds the bytes of the .bin file, as one string literal
# (its pieces read as Python bytes literals too), plus the literal's NUL.
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
    check "$model: the embedded literal holds the bytes of the .bin file" \
        "$PY" -c "
import ast, re, sys
text = open('$emb/${model}_weights.c').read()
pieces = re.findall(r'^    (\".*\");?$', text, re.M)
got = b''.join(ast.literal_eval('b' + p) for p in pieces)
want = open('$bin/${model}_weights.bin', 'rb').read()
size = int(re.search(r'_weights\[(\d+)\]', text).group(1))
sys.exit(0 if got == want and size == len(want) + 1 else 1)"
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

# Every byte value, and the text a literal must not be read as: a trigraph (??=), escapes
# followed by digits, a quote and a backslash. A Cast makes them the output.
"$PY" - "$TMP/bytes.onnx" <<'PYEOF'
import sys
import onnx
from onnx import TensorProto as TP, helper
raw = bytes(range(256)) + b'??=??/"\\\x001\x007\x3f?8\xff9'
g = helper.make_graph([helper.make_node("Cast", ["w"], ["y"], to=TP.FLOAT)], "bytes", [],
                      [helper.make_tensor_value_info("y", TP.FLOAT, [len(raw)])],
                      initializer=[helper.make_tensor("w", TP.UINT8, [len(raw)], raw, raw=True)])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.save(m, sys.argv[1])
PYEOF
check_bytes() {
    "$TMP/bytes.exe" "$TMP/bytes.out" && "$PY" -c "
import sys, numpy as np, onnx
from onnx import numpy_helper
w = numpy_helper.to_array(onnx.load('$TMP/bytes.onnx').graph.initializer[0]).astype(np.float32)
sys.exit(0 if np.array_equal(np.fromfile('$TMP/bytes.out', '<f4'), w) else 1)"
}
if "$KILN" compile "$TMP/bytes.onnx" -o "$TMP/bytes" --test-main --weights embed --passes=none \
    >/dev/null; then
    check "bytes: embed bundle builds with gcc $STRICT" \
        gcc $STRICT -I"$TMP/bytes" "$TMP/bytes/bytes.c" "$TMP/bytes/bytes_weights.c" \
        "$TMP/bytes/bytes_test_main.c" -o "$TMP/bytes.exe" -lm
    check "bytes: every byte value and trigraph survives the literal" check_bytes
else
    fail "bytes: kiln compile"
fi
finish
