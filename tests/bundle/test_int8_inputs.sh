#!/usr/bin/env bash
# kiln calibrate and kiln validate --int8 --per-layer on a model of several inputs (issue 13:
# token ids and a mask, as the suite's BERT takes): a float32 input and an int64 one, fed
# from .npz files with a member per input. The float input gets its range in the .qparams,
# the integer one is only fed; the .qparams compiles with --int8 and the per-layer report
# runs on the same samples. Bad sets fail with one error naming the file and the input,
# exit 1, and write nothing: a .npy (one array) for a model of two inputs, a .npz without
# one input's member, ids of another integer type, sets of different counts.
# Usage: test_int8_inputs.sh PATH/TO/kiln
. "$(dirname "$0")/lib.bash"

W="$TMP/inputs"
mkdir -p "$W/data"
if ! "$PY" - "$W" >"$TMP/make.log" 2>&1 <<'PYEOF'; then
import sys
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper
w = sys.argv[1]
rng = np.random.default_rng(7)
inits = [numpy_helper.from_array(rng.standard_normal((50, 16)).astype(np.float32), "emb"),
         numpy_helper.from_array((rng.standard_normal((16, 12)) * 0.25).astype(np.float32), "w1"),
         numpy_helper.from_array(rng.standard_normal(12).astype(np.float32) * 0.1, "b1")]
nodes = [helper.make_node("Gather", ["emb", "ids"], ["e"], name="embed"),
         helper.make_node("Add", ["e", "x"], ["s"], name="mix"),
         helper.make_node("MatMul", ["s", "w1"], ["m"], name="proj"),
         helper.make_node("Add", ["m", "b1"], ["y"], name="bias")]
graph = helper.make_graph(nodes, "two_inputs",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 16]),
                           helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5, 12])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.save(model, f"{w}/two.onnx")
for i in range(12):
    np.savez(f"{w}/data/s{i:02d}.npz", x=rng.standard_normal((1, 1, 16)).astype(np.float32) * 2,
             ids=rng.integers(0, 50, (1, 5)).astype(np.int64))
# the same 12 samples as one .npz with a first axis
xs = [np.load(f"{w}/data/s{i:02d}.npz") for i in range(12)]
np.savez(f"{w}/set.npz", x=np.stack([s["x"] for s in xs]), ids=np.stack([s["ids"] for s in xs]))
PYEOF
    fail "the two-input model and its samples are made"
    sed 's/^/    /' "$TMP/make.log" | tail -n 20
    finish
fi
pass "the two-input model and its samples are made"

check "kiln calibrate takes .npz samples with a member per input" \
    "$KILN" calibrate "$W/two.onnx" --data "$W/data" -o "$W/two.qparams" --quiet
if grep -q "^tensor x scale=" "$W/two.qparams" && ! grep -q "^tensor ids " "$W/two.qparams" &&
    grep -q "^tensor y scale=" "$W/two.qparams"; then
    pass "the float input and the computed tensors have ranges, the int64 input none"
else
    fail "the float input and the computed tensors have ranges, the int64 input none"
    sed 's/^/    /' "$W/two.qparams" | head -n 12
fi
check "one .npz with the samples along a first axis gives the same .qparams bytes" \
    bash -c "'$KILN' calibrate '$W/two.onnx' --data '$W/set.npz' -o '$W/set.qparams' --quiet &&
             cmp '$W/set.qparams' '$W/two.qparams'"
check "kiln compile --int8 takes the .qparams" \
    "$KILN" compile "$W/two.onnx" -o "$W/bundle" --int8 "$W/two.qparams"
"$KILN" validate "$W/two.onnx" --int8 "$W/two.qparams" --per-layer --inputs "$W/data" --quiet \
    >"$W/per_layer.txt" 2>"$TMP/pl.log"
if awk '$1 ~ /^[0-9]+$/ && NF >= 7 { n++ } END { exit !(n >= 1) }' "$W/per_layer.txt" &&
    grep -q "12 samples" "$W/per_layer.txt"; then
    pass "kiln validate --per-layer runs both bundles on the 12 two-input samples"
else
    fail "kiln validate --per-layer runs both bundles on the 12 two-input samples"
    sed 's/^/    /' "$W/per_layer.txt" "$TMP/pl.log" | head -n 12
fi
rc=0
"$KILN" validate "$W/two.onnx" --int8 "$W/two.qparams" --per-layer --quiet >/dev/null 2>"$TMP/pl.log" || rc=$?
if [ "$rc" -eq 1 ] && grep -q "input 'ids' is not float32: --per-layer takes its samples from --inputs" "$TMP/pl.log"; then
    pass "random samples are refused for an integer input, naming it"
else
    fail "random samples are refused for an integer input, naming it (exit $rc)"
    sed 's/^/    /' "$TMP/pl.log" | head -n 5
fi

# bad sets: one error naming the file and the input, exit 1, no .qparams
badset() { # DESCRIPTION EXPECTED-TEXT PYTHON-STATEMENTS (writing into folder d)
    local rc=0
    rm -rf "$W/bad" "$W/bad.qparams"
    mkdir -p "$W/bad"
    cp "$W/data/s00.npz" "$W/bad/a.npz"
    "$PY" -c "import numpy as np; d = '$W/bad'; rng = np.random.default_rng(1); $3"
    "$KILN" calibrate "$W/two.onnx" --data "$W/bad" -o "$W/bad.qparams" >"$TMP/bad.log" 2>&1 || rc=$?
    if [ "$rc" -eq 1 ] && [ ! -e "$W/bad.qparams" ] && grep -q -- "$2" "$TMP/bad.log" &&
        [ "$(grep -c error "$TMP/bad.log")" -eq 1 ]; then
        pass "$1"
    else
        fail "$1 (exit $rc)"
        sed 's/^/    /' "$TMP/bad.log" | head -n 5
    fi
}
badset "a .npy for a model of two inputs is refused" \
    "b.npy: input 'x': a .npy holds one array: a model of several inputs takes .npz files" \
    "np.save(d + '/b.npy', np.zeros((1, 1, 16), np.float32))"
badset "a .npz without one input's member names it" \
    "b.npz: input 'ids': no member 'ids.npy' for input 'ids'" \
    "np.savez(d + '/b.npz', x=np.zeros((1, 1, 16), np.float32))"
badset "ids of another integer type are named" \
    "b.npz: input 'ids': not int64 ('<i8') data" \
    "np.savez(d + '/b.npz', x=np.zeros((1, 1, 16), np.float32), ids=np.zeros((1, 5), np.int32))"
badset "inputs with different sample counts are refused" \
    "2 samples of input 'ids' but 3 of input 'x'" \
    "np.savez(d + '/b.npz', x=np.zeros((2, 1, 1, 16), np.float32), ids=np.zeros((1, 1, 5), np.int64))"
finish
