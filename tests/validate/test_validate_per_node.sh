#!/usr/bin/env bash
# kiln validate --per-node prints every node of a multi-node model and, with a tolerance
# made impossible (--atol 0 --rtol 0), names the first node that diverges: Sigmoid, after
# Add, Mul and Relu, which are exact in IEEE arithmetic; with its inputs' errors.
# Usage: test_validate_per_node.sh PATH/TO/kiln
source "$(dirname "$0")/lib.bash"

run ok "$M/chain.onnx" --per-node --seed 2
expect_rc ok 0 "--per-node passes at the default tolerance"
n="$(grep -cE '^ok   node [0-9]+ ' "$TMP/ok.out" || true)"
[ "$n" -eq 8 ] && pass "every one of the 8 nodes is printed and within tolerance" ||
    { fail "$n of 8 nodes printed as ok"; cat "$TMP/ok.out"; }
grep -q "no node diverges" "$TMP/ok.out" && pass "no divergence is reported" || fail "divergence line"

run strict "$M/chain.onnx" --per-node --atol 0 --rtol 0 --json "$TMP/strict.json"
expect_rc strict 1 "--per-node at tolerance 0 fails"
if grep -q "^first divergence: node 3 'sigmoid' (Sigmoid, opset 17)" "$TMP/strict.out"; then
    pass "the first diverging node is named: Sigmoid, node 3"
else
    fail "first divergence"; cat "$TMP/strict.out"
fi
for k in 0 1 2; do
    grep -qE "^ok   node $k " "$TMP/strict.out" && pass "node $k (exact op) is ok at tolerance 0" ||
        fail "node $k"
done
grep -qE "^    input 'r': within tolerance, max abs 0," "$TMP/strict.out" &&
    pass "the diverging node's input is shown with its errors" || fail "input errors line"
if "$PY" - "$TMP/strict.json" <<'PYEOF'; then
import json, sys
r = json.load(open(sys.argv[1]))
assert [n["op"] for n in r["nodes"]] == ["Add", "Mul", "Relu", "Sigmoid", "Tanh", "Sub", "Mul", "Cast"]
f = r["first_divergence"]
assert f["name"] == "sigmoid" and f["op"] == "Sigmoid" and f["index"] == 3, f
assert f["inputs"][0]["name"] == "r" and f["inputs"][0]["max_abs"] == 0, f["inputs"]
assert f["outputs"][0]["name"] == "s" and f["outputs"][0]["out_of_tolerance"] > 0
assert all(n["outputs"][0]["pass"] for n in r["nodes"][:3])
PYEOF
    pass "the JSON has every node and the first divergence"
else
    fail "per-node JSON"
fi

run tiny "$ROOT/examples/models/tinycnn.onnx" --per-node --dim batch=2
expect_rc tiny 0 "tinycnn --per-node passes"
n="$(grep -cE '^ok   node [0-9]+ ' "$TMP/tiny.out" || true)"
[ "$n" -ge 9 ] && pass "tinycnn: $n nodes compared" || { fail "tinycnn: $n nodes"; cat "$TMP/tiny.out"; }
finish
