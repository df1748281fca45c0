#!/usr/bin/env bash
# kiln validate over many inputs and what it says about them: --samples N random samples; a
# .npz or .npy with a batch axis (a new first axis, or rows of a batch-1 model's first
# axis); a folder of sample folders; --outputs writes the bundle's outputs as .npy; open
# dims get defaults a warning names, large enough that no tensor of the model is empty;
# a comparison that proves little (outputs all 0) passes with a warning; --per-node ranks
# the nodes by error growth. Usage: test_validate_samples.sh PATH/TO/kiln
source "$(dirname "$0")/lib.bash"

"$PY" - "$TMP" "$M" <<'PYEOF' || { echo "FAIL writing the inputs"; exit 1; }
import os, sys
import numpy as np
import onnx
from onnx import TensorProto as TP, helper, numpy_helper
t, m = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(5)
np.savez(t + "/cls_new_axis.npz", x=rng.normal(size=(5, 2, 20)).astype(np.float32))
np.savez(t + "/cls_rows.npz", x=rng.normal(size=(6, 20)).astype(np.float32))
np.save(t + "/cls.npy", rng.normal(size=(4, 2, 20)).astype(np.float32))
np.savez(t + "/chain_mismatch.npz", x=rng.normal(size=(3, 4, 256)).astype(np.float32),
         y=rng.normal(size=(2, 256)).astype(np.float32))
for k in range(3):  # ONNX test-data layout: test_data_set_K/input_J.pb
    d = t + "/sets/test_data_set_%d" % k
    os.makedirs(d)
    for j, shape in enumerate([(4, 256), (256,)]):
        a = rng.normal(size=shape).astype(np.float32)
        open(d + "/input_%d.pb" % j, "wb").write(numpy_helper.from_array(a).SerializeToString())
# six stride-2 max pools and a global average: a 32x32 image leaves the sixth map empty
x = helper.make_tensor_value_info("image", TP.FLOAT, ["batch", 3, "height", "width"])
nodes, prev = [], "image"
for k in range(6):
    nodes.append(helper.make_node("MaxPool", [prev], ["p%d" % k], kernel_shape=[2, 2],
                                  strides=[2, 2]))
    prev = "p%d" % k
nodes.append(helper.make_node("GlobalAveragePool", [prev], ["gap"]))
g = helper.make_graph(nodes, "pools", [x], [helper.make_tensor_value_info("gap", TP.FLOAT, None)])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
          m + "/pools.onnx")
# an output that is 0 whatever the input
zero = numpy_helper.from_array(np.zeros((1,), np.float32), "zero")
g = helper.make_graph([helper.make_node("Mul", ["x", "zero"], ["y"])], "zeros",
                      [helper.make_tensor_value_info("x", TP.FLOAT, [8])],
                      [helper.make_tensor_value_info("y", TP.FLOAT, [8])], [zero])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
          m + "/zeros.onnx")
PYEOF

run rand "$M/chain.onnx" --samples 3 --seed 4 --json "$TMP/rand.json" --keep "$TMP/keepr"
expect_rc rand 0 "--samples 3: random inputs, three samples, pass"
grep -q "^inputs: random, seed 4, 3 samples" "$TMP/rand.out" && pass "the report says 3 samples" ||
    { fail "samples line"; cat "$TMP/rand.out"; }
grep -q "^PASS output 'out' f32\[4,256\]: .*; 3 of 3 samples within tolerance" "$TMP/rand.out" &&
    pass "each output counts its samples within tolerance" || { fail "per-output samples"; cat "$TMP/rand.out"; }
if "$PY" - "$TMP/rand.json" "$TMP/keepr" <<'PYEOF'; then
import json, sys
import numpy as np
r, keep = json.load(open(sys.argv[1])), sys.argv[2]
assert r["samples"] == 3 and r["outputs"][0]["samples"] == 3, r
assert r["outputs"][0]["elements"] == 3 * 4 * 256
xs = [np.fromfile("%s/sample_%d/in_0.bin" % (keep, k), np.float32) for k in range(3)]
assert not np.array_equal(xs[0], xs[1]) and not np.array_equal(xs[1], xs[2]), "samples differ"
PYEOF
    pass "JSON counts 3 samples; each sample got its own random data"
else
    fail "samples JSON"
fi

run npz "$M/classifier.onnx" --dim batch=2 --inputs "$TMP/cls_new_axis.npz" \
    --outputs "$TMP/outs/deep" --keep "$TMP/keepn"
expect_rc npz 0 "an .npz with a new batch axis [5, 2, 20] gives 5 samples"
grep -q "^inputs: from .*cls_new_axis.npz (5 samples)" "$TMP/npz.out" && grep -q "top-1 10/10" "$TMP/npz.out" &&
    pass "5 samples of 2 rows: top-1 over 10 rows" || { fail "npz report"; cat "$TMP/npz.out"; }
if "$PY" - "$TMP" <<'PYEOF'; then
import sys
import numpy as np
import onnxruntime as ort
t = sys.argv[1]
got = np.load(t + "/outs/deep/probs.npy")
assert got.shape == (5, 2, 12) and got.dtype == np.float32, (got.shape, got.dtype)
x = np.load(t + "/cls_new_axis.npz")["x"]
s = ort.InferenceSession(t + "/models/classifier.onnx", providers=["CPUExecutionProvider"])
for k in range(5):
    kept = np.fromfile(t + "/keepn/sample_%d/out_0.bin" % k, np.float32).reshape(2, 12)
    assert np.array_equal(got[k], kept), k
    (want,) = s.run(None, {"x": x[k]})
    assert np.allclose(got[k], want, rtol=1e-3, atol=1e-4), k
PYEOF
    pass "--outputs writes probs.npy [5, 2, 12]: the bundle's outputs, as ONNX Runtime's"
else
    fail "--outputs .npy"
fi

run rows "$M/classifier.onnx" --dim batch=2 --inputs "$TMP/cls_rows.npz"
expect_rc rows 0 "an .npz of 6 rows for a batch-2 model gives 3 samples"
grep -q "(3 samples)" "$TMP/rows.out" && pass "rows along the first axis: 3 samples" ||
    { fail "rows"; cat "$TMP/rows.out"; }
run npy "$M/classifier.onnx" --dim batch=2 --inputs "$TMP/cls.npy"
expect_rc npy 0 "one .npy for a one-input model: 4 samples"

run sets "$M/chain.onnx" --inputs "$TMP/sets" --json "$TMP/sets.json"
expect_rc sets 0 "a folder of test_data_set_K folders: one sample each"
"$PY" -c "import json,sys; assert json.load(open(sys.argv[1]))['samples'] == 3" "$TMP/sets.json" &&
    pass "3 sample folders, 3 samples" || fail "sample folders"

run mismatch "$M/chain.onnx" --inputs "$TMP/chain_mismatch.npz"
expect_rc mismatch 2 "inputs with different numbers of samples exit 2"
one_line_error mismatch "different sample counts"
run both "$M/chain.onnx" --inputs "$TMP/sets" --samples 2
expect_rc both 2 "--samples with --inputs is a usage error"

run pools "$M/pools.onnx"
expect_rc pools 0 "open image dims get defaults that leave no tensor empty"
grep -q "warning: 3 open dims of the inputs set to defaults (choose with --dim or --shape): batch=1, height=64, width=64 (1 for a batch; 64: the smallest power of two from 32 that leaves no tensor of the model empty)" "$TMP/pools.err" &&
    pass "the warning names batch=1, height=64, width=64 (32 would empty the sixth pool)" ||
    { fail "defaults warning"; cat "$TMP/pools.err"; }
grep -q "^PASS output 'gap' f32\[1,3,1,1\]" "$TMP/pools.out" && ! grep -q "nan" "$TMP/pools.out" &&
    pass "the global pool averages a real map" || { fail "pools output"; cat "$TMP/pools.out"; }

run zeros "$M/zeros.onnx"
expect_rc zeros 0 "an output of zeros passes"
grep -q "^    warning: every element is 0 on both sides: the comparison proves little" "$TMP/zeros.out" &&
    pass "with a warning that the comparison proves little" || { fail "vacuous warning"; cat "$TMP/zeros.out"; }

run strict "$M/chain.onnx" --per-node --atol 0 --rtol 0 --seed 3 --json "$TMP/strict.json"
expect_rc strict 1 "--per-node at tolerance 0 fails"
grep -q "^the nodes that grow the error most:" "$TMP/strict.out" &&
    grep -qE "^  x[0-9.e+]+ +node 3 Sigmoid 'sigmoid' \(opset 17\): error 0 in, .* out  <- likely cause" "$TMP/strict.out" &&
    pass "the ranking names Sigmoid (over exact inputs) as the likely cause" ||
    { fail "growth ranking"; cat "$TMP/strict.out"; }
grep -qE "^    worst: \[[0-9]+,[0-9]+\] kiln .* ort .* error .* \(tolerance 0\)$" "$TMP/strict.out" &&
    pass "the first divergence lists its worst failing elements with indices" ||
    { fail "worst list"; cat "$TMP/strict.out"; }
if "$PY" - "$TMP/strict.json" <<'PYEOF'; then
import json, sys
r = json.load(open(sys.argv[1]))
growth = {n["op"] + str(n["index"]): n["growth"] for n in r["nodes"]}
assert all(growth[k] == 0 for k in ("Add0", "Mul1", "Relu2")), growth
assert r["likely_cause"]["op"] == "Sigmoid" and r["likely_cause"]["growth"] > 0, r["likely_cause"]
out = r["outputs"][0]
assert out["failing"] and out["failing"][0]["error"] == out["max_abs"], out["failing"][0]
assert out["worst_index"] == out["failing"][0]["index"]
PYEOF
    pass "JSON: growth per node, the likely cause, the failing elements"
else
    fail "per-node JSON"
fi
# Progress over many samples: on a terminal only (script(1) gives kiln one), never with
# --quiet, never in a pipe; the report itself is unchanged.
if command -v script >/dev/null; then
    script -qec "$KILN validate $M/chain.onnx --samples 4" "$TMP/tty.log" >/dev/null 2>&1
    grep -q "kiln validate: the bundle on sample 4 of 4" "$TMP/tty.log" &&
        grep -q "^PASS" "$TMP/tty.log" &&
        pass "a terminal gets a progress line naming the sample" ||
        { fail "no progress line on a terminal"; head -c 400 "$TMP/tty.log" | cat -v; }
    script -qec "$KILN validate $M/chain.onnx --samples 4 --quiet" "$TMP/quiet.log" >/dev/null 2>&1
    ! grep -q "kiln validate: the bundle on" "$TMP/quiet.log" && grep -q "^PASS" "$TMP/quiet.log" &&
        pass "--quiet on a terminal: no progress line, the report as always" ||
        { fail "--quiet still showed progress"; head -c 400 "$TMP/quiet.log" | cat -v; }
else
    fail "script(1) not found (util-linux): cannot give kiln a terminal"
fi
"$KILN" validate "$M/chain.onnx" --samples 4 >/dev/null 2>"$TMP/pipe.err"
! grep -q "kiln validate: the bundle on" "$TMP/pipe.err" &&
    pass "stderr that is no terminal gets no progress" ||
    { fail "progress written to a pipe"; head -c 300 "$TMP/pipe.err" | cat -v; }
finish
