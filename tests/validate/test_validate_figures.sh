#!/usr/bin/env bash
# kiln validate passes small models, and its figures are right: max abs/rel error, cosine,
# out-of-tolerance count and top-1/top-5 are recomputed here with numpy from the inputs
# and outputs it kept (--keep) and a fresh ONNX Runtime run.
# Usage: test_validate_figures.sh PATH/TO/kiln
source "$(dirname "$0")/lib.bash"

for m in chain classifier gather; do
    dim=()
    [ "$m" = classifier ] && dim=(--dim batch=5)
    run "$m" "$M/$m.onnx" --seed 3 "${dim[@]}"
    expect_rc "$m" 0 "$m.onnx passes validation"
done
if grep -q "PASS output 'probs' f32\[5,12\]: .*top-1 5/5, top-5 5/5" "$TMP/classifier.out"; then
    pass "class scores get top-1 and top-5 agreement"
else
    fail "no top-1/top-5 figures for the classifier"; cat "$TMP/classifier.out"
fi
run nodim "$M/classifier.onnx"
if [ "$RC" -eq 0 ] && grep -q "warning: 1 open dim of the inputs set to defaults (choose with --dim or --shape): batch=1$" "$TMP/nodim.err" &&
    grep -q "f32\[1,12\]" "$TMP/nodim.out"; then
    pass "a batch dimension without --dim is set to 1, with a warning that names it"
else
    fail "symbolic dimension default"; cat "$TMP/nodim.out" "$TMP/nodim.err"
fi

# Tolerance 0 on a model with transcendental ops: fails (exit 1), and every figure in the
# JSON matches numpy's on the kept files.
run strict "$M/chain.onnx" --seed 11 --atol 0 --rtol 0 --json "$TMP/strict.json" \
    --keep "$TMP/keep"
expect_rc strict 1 "tolerance 0 on Sigmoid/Tanh fails with exit 1"
if grep -q "^FAIL output 'out'" "$TMP/strict.out" && grep -q "^PASS output 'count'" "$TMP/strict.out"; then
    pass "the failing output is FAIL, the exact one PASS"
else
    fail "per-output verdicts"; cat "$TMP/strict.out"
fi
if "$PY" - "$TMP/strict.json" "$TMP/keep" "$M/chain.onnx" <<'PYEOF'; then
import json, sys
import numpy as np
import onnxruntime as ort
report, keep, model = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
x = np.fromfile(keep + "/in_0.bin", np.float32).reshape(4, 256)
y = np.fromfile(keep + "/in_1.bin", np.float32).reshape(256)
# The inputs are what the seed promises: uniform in [-1, 1), fresh (not zeros).
assert x.min() >= -1 and x.max() < 1 and np.abs(x).mean() > 0.3, (x.min(), x.max())
ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x, "y": y})
outs = [np.fromfile(keep + "/out_0.bin", np.float32).reshape(4, 256),
        np.fromfile(keep + "/out_1.bin", np.int32).reshape(4, 256)]
for got, want, fig in zip(outs, ref, report["outputs"]):
    a, b = got.astype(np.float64), want.astype(np.float64)
    err = np.abs(a - b)
    nz = b != 0
    checks = {
        "max_abs": err.max(),
        "max_rel": (err[nz] / np.abs(b[nz])).max() if nz.any() else 0.0,
        "cosine": (a * b).sum() / np.sqrt((a * a).sum() * (b * b).sum()),
        "out_of_tolerance": int((err > 0).sum()),
        "elements": a.size,
    }
    for key, value in checks.items():
        assert np.isclose(fig[key], value, rtol=1e-6, atol=1e-12), (fig["name"], key, fig[key], value)
    assert fig["pass"] == (checks["out_of_tolerance"] == 0), fig
    if fig["max_abs"] > 0:
        assert fig["worst_index"] == int(err.argmax()), (fig["worst_index"], err.argmax())
assert report["outputs"][0]["out_of_tolerance"] > 0, "Sigmoid/Tanh were bit-exact?"
assert report["pass"] is False and report["rtol"] == 0 and report["atol"] == 0
PYEOF
    pass "max abs, max rel, cosine, counts and worst index match numpy's"
else
    fail "the JSON figures differ from numpy's"
fi

# top-1/top-5 against numpy on the classifier (batch 7).
run cls "$M/classifier.onnx" --dim batch=7 --seed 5 --json "$TMP/cls.json" --keep "$TMP/keepc"
if "$PY" - "$TMP/cls.json" "$TMP/keepc" "$M/classifier.onnx" <<'PYEOF'; then
import json, sys
import numpy as np
import onnxruntime as ort
report, keep, model = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
x = np.fromfile(keep + "/in_0.bin", np.float32).reshape(7, 20)
(want,) = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})
got = np.fromfile(keep + "/out_0.bin", np.float32).reshape(7, 12)
fig = report["outputs"][0]
top1 = np.mean(got.argmax(1) == want.argmax(1))
top5 = np.mean([set(np.argsort(-g)[:5]) == set(np.argsort(-w)[:5]) for g, w in zip(got, want)])
assert fig["rows"] == 7 and fig["top1"] == top1 and fig["top5"] == top5, (fig, top1, top5)
assert report["pass"] is True and report["inputs"] == {"seed": 5, "dist": "uniform"}
PYEOF
    pass "top-1 and top-5 agreement match numpy's"
else
    fail "top-k figures"
fi

# --json - : stdout is the JSON alone (the report goes to stderr).
run stdout "$M/gather.onnx" --json -
if [ "$RC" -eq 0 ] && "$PY" -c "import json,sys; assert json.load(open(sys.argv[1]))['pass']" \
    "$TMP/stdout.out" && grep -q "^PASS output 'rows'" "$TMP/stdout.err"; then
    pass "--json - writes only JSON to stdout"
else
    fail "--json -"; head -5 "$TMP/stdout.out"
fi

# The shipped example model.
run tiny "$ROOT/examples/models/tinycnn.onnx" --dim batch=4
expect_rc tiny 0 "examples/models/tinycnn.onnx validates (batch 4)"
grep -q "top-1 4/4" "$TMP/tiny.out" && pass "tinycnn: top-1 4/4" || { fail "tinycnn top-1"; cat "$TMP/tiny.out"; }
run tinyn "$ROOT/examples/models/tinycnn.onnx" --dim batch=2 --dist normal --seed 9
expect_rc tinyn 0 "tinycnn validates on normal inputs"
finish
