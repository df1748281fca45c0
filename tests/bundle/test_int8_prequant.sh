#!/usr/bin/env bash
# Pre-quantized models on the int8 kernels (issue 13 item 3): the digits CNN and the tiny CNN
# of examples/ quantized by onnxruntime.quantization.quantize_static (per-channel int8
# weights) in QDQ format (uint8 and int8 activations) and in QOperator format (QLinearConv,
# com.microsoft QGemm, QLinearGlobalAveragePool, QLinearSoftmax), compiled by kiln with no
# .qparams: every convolution and Gemm must run as QConv/QGemm (the generated code's node
# comments say which kernel runs; no float Conv/Gemm left), and the bundle must agree with
# the model's QDQ semantics as ONNX Runtime runs them (graph optimizations off) within one
# quantization step on >= 95% of the output elements, top-1 on >= 95% of 32 inputs, cosine
# >= 0.99 (tests/int8/prequant.py, which also prints the agreement with ONNX Runtime's own
# int8 kernels). The same for a CNN quantized by PyTorch 1.13's FX graph mode and exported
# by torch.onnx.export (tests/int8/torch_qdq.py). The model suite's MobileNetV2, when its export is cached, is held by cosine
# (>= 0.98) and its arena against the float emulation's (--no-pass=fold-qdq). An op Kiln does
# not know (a made-up com.microsoft op): the first error line names it and its domain,
# exit 1, no output folder.
# Usage: test_int8_prequant.sh PATH/TO/kiln
. "$(dirname "$0")/lib.bash"

W="$TMP/pq"
mkdir -p "$W"
PQ="$ROOT/tests/int8/prequant.py"

# build NAME MODEL [kiln compile options]: bundle + test main in $W/NAME
build() {
    local name="$1" model="$2"
    shift 2
    rm -rf "$W/$name"
    "$KILN" compile "$model" -o "$W/$name" --test-main --name net --quiet "$@" &&
        cc -O2 -march=native -I"$W/$name" "$W/$name/net.c" "$W/$name/net_test_main.c" \
            -o "$W/$name/exe" -lm
}

# kernels DIR: "QConv=N QGemm=N Conv=N Gemm=N" from the generated code's node comments
kernels() {
    local c="$1/net.c"
    printf 'QConv=%s QGemm=%s Conv=%s Gemm=%s' "$(grep -c "/\* QConv '" "$c")" \
        "$(grep -c "/\* QGemm '" "$c")" "$(grep -c "/\* \(Fused\)\?Conv '" "$c")" \
        "$(grep -c "/\* \(Fused\)\?\(Gemm\|MatMul\) '" "$c")"
}

for src in "$ROOT/examples/digits/digits.onnx" "$ROOT/examples/models/tinycnn.onnx"; do
    b="$(basename "$src" .onnx)"
    for v in qdq.u8 qdq.s8 qop.u8; do
        m="$W/$b.$v.onnx"
        if ! "$PY" "$PQ" quantize "$src" "$m" "${v%.*}" "${v#*.}" >"$TMP/q.log" 2>&1; then
            fail "$b $v: quantize_static"
            sed 's/^/    /' "$TMP/q.log" | tail -n 5
            continue
        fi
        opts=()
        [ "$b" = tinycnn ] && opts=(--dim batch=1)
        check "$b $v compiles ($(tail -n 1 "$TMP/q.log" | sed 's/.*: //'))" build "$b.$v" "$m" "${opts[@]}"
        k="$(kernels "$W/$b.$v")"
        if [ "$k" = "QConv=2 QGemm=1 Conv=0 Gemm=0" ]; then pass "$b $v runs the int8 kernels ($k)"
        else fail "$b $v runs the int8 kernels ($k; want QConv=2 QGemm=1 Conv=0 Gemm=0)"; fi
        check "$b $v agrees with the QDQ semantics" "$PY" "$PQ" compare "$m" "$W/$b.$v/exe" \
            "$W/$b.$v/net_weights.bin" 32 --ref-model "$W/$b.qdq.u8.onnx"
        sed 's/^/    /' "$TMP/check.log"
    done
done

# the other com.microsoft ops: a CNN with Sigmoid, LeakyRelu, Concat, AveragePool and Mul
# quantized in QOperator format (QLinearSigmoid, QLinearLeakyRelu, QLinearConcat,
# QLinearAveragePool, QLinearMul, QLinearGlobalAveragePool, QGemm) and in QDQ; the three
# convolutions run int8, the Sigmoid and LeakyRelu after two of them as int8 tables (a
# quantized convolution fuses clamp activations only), the average pool has no int8 kernel;
# random weights leave near ties, so top-1 >= 75%
"$PY" - "$W/opsmix.onnx" <<'PYEOF' || fail "the op-mix CNN is written"
import sys
import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh
rng = np.random.default_rng(3)
inits, nodes = [], []
def c(name, a):
    inits.append(nh.from_array(np.asarray(a, np.float32), name))
    return name
def conv(x, y, cin, cout):
    nodes.append(h.make_node("Conv", [x, c(y + "_w", rng.standard_normal((cout, cin, 3, 3)) * 0.3),
                                      c(y + "_b", rng.standard_normal(cout) * 0.1)], [y], name=y,
                             pads=[1, 1, 1, 1], kernel_shape=[3, 3]))
conv("x", "a", 3, 8)
nodes.append(h.make_node("Sigmoid", ["a"], ["as"], name="sig"))
conv("x", "b", 3, 8)
nodes.append(h.make_node("LeakyRelu", ["b"], ["bl"], name="lrelu", alpha=0.1))
nodes.append(h.make_node("Concat", ["as", "bl"], ["cat"], name="cat", axis=1))
nodes.append(h.make_node("AveragePool", ["cat"], ["ap"], name="ap", kernel_shape=[2, 2], strides=[2, 2]))
conv("ap", "d", 16, 8)
nodes.append(h.make_node("Mul", ["d", "d"], ["dm"], name="mul"))
nodes.append(h.make_node("GlobalAveragePool", ["dm"], ["g"], name="gap"))
nodes.append(h.make_node("Flatten", ["g"], ["f"], name="flat"))
nodes.append(h.make_node("Gemm", ["f", c("fw", rng.standard_normal((8, 10)) * 0.3),
                                  c("fb", rng.standard_normal(10) * 0.1)], ["y"], name="fc"))
g = h.make_graph(nodes, "opsmix", [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 16, 16])],
                 [h.make_tensor_value_info("y", T.FLOAT, [1, 10])], inits)
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
m.ir_version = 8
onnx.save(m, sys.argv[1])
PYEOF
for v in qdq.u8 qop.u8; do
    m="$W/opsmix.$v.onnx"
    if "$PY" "$PQ" quantize "$W/opsmix.onnx" "$m" "${v%.*}" u8 >"$TMP/q.log" 2>&1 &&
        check "op-mix CNN $v compiles ($(tail -n 1 "$TMP/q.log" | sed 's/.*: //'))" build "opsmix.$v" "$m"; then
        k="$(kernels "$W/opsmix.$v")"
        if [ "$k" = "QConv=3 QGemm=1 Conv=0 Gemm=0" ] && grep -q "/\* QMul '" "$W/opsmix.$v/net.c" &&
            [ "$(grep -c "/\* QLut '" "$W/opsmix.$v/net.c")" -ge 2 ] &&
            grep -q "/\* QGlobalAveragePool '" "$W/opsmix.$v/net.c"; then
            pass "op-mix CNN $v: QConv, QLut, QMul, QGlobalAveragePool, QGemm ($k)"
        else
            fail "op-mix CNN $v: QConv, QLut, QMul, QGlobalAveragePool, QGemm ($k)"
        fi
        check "op-mix CNN $v agrees with the QDQ semantics" "$PY" "$PQ" compare "$m" \
            "$W/opsmix.$v/exe" "$W/opsmix.$v/net_weights.bin" 32 --ref-model "$W/opsmix.qdq.u8.onnx" \
            --min-top1 0.75 --min-cos 0.999
        sed 's/^/    /' "$TMP/check.log"
    else
        fail "op-mix CNN $v: quantize_static"
    fi
done

# PyTorch's own QDQ export (FX graph mode, fbgemm; Debian's python3-torch 1.13): scales as
# Constant nodes, QuantizeLinear -> Cast -> DequantizeLinear, a residual add
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
    check "PyTorch FX quantized CNN exports (torch.onnx.export)" /usr/bin/python3 \
        "$ROOT/tests/int8/torch_qdq.py" "$W/torch.onnx"
    check "the PyTorch QDQ model compiles" build torch "$W/torch.onnx"
    k="$(kernels "$W/torch")"
    if [ "$k" = "QConv=3 QGemm=1 Conv=0 Gemm=0" ]; then pass "PyTorch QDQ runs the int8 kernels ($k)"
    else fail "PyTorch QDQ runs the int8 kernels ($k; want QConv=3 QGemm=1 Conv=0 Gemm=0)"; fi
    check "the PyTorch QDQ model agrees with its QDQ semantics" "$PY" "$PQ" compare \
        "$W/torch.onnx" "$W/torch/exe" "$W/torch/net_weights.bin" 32
    sed 's/^/    /' "$TMP/check.log"
else
    echo "note: /usr/bin/python3 has no torch (Debian's python3-torch): PyTorch QDQ skipped"
fi

# the model suite's MobileNetV2 (random weights), when cached: 52 QConv, arena vs emulation
mbv2="$(ls -t "$HOME"/.cache/kiln/models/*/mobilenet_v2.onnx 2>/dev/null | head -n 1 || true)"
if [ -n "$mbv2" ]; then
    for v in qdq.u8 qop.u8; do
        m="$W/mbv2.$v.onnx"
        check "mobilenet_v2 $v: quantize_static" "$PY" "$PQ" quantize "$mbv2" "$m" "${v%.*}" "${v#*.}"
        check "mobilenet_v2 $v compiles" build "mbv2.$v" "$m"
        k="$(kernels "$W/mbv2.$v")"
        if [ "$k" = "QConv=52 QGemm=1 Conv=0 Gemm=0" ]; then pass "mobilenet_v2 $v runs the int8 kernels ($k)"
        else fail "mobilenet_v2 $v runs the int8 kernels ($k)"; fi
        check "mobilenet_v2 $v agrees with the QDQ semantics (cosine >= 0.98, top-1 3 of 4)" \
            "$PY" "$PQ" compare "$m" "$W/mbv2.$v/exe" "$W/mbv2.$v/net_weights.bin" 4 \
            --ref-model "$W/mbv2.qdq.u8.onnx" --min-within 0 --min-top1 0.75 --min-cos 0.98
        sed 's/^/    /' "$TMP/check.log"
    done
    a8="$("$KILN" compile "$W/mbv2.qdq.u8.onnx" -o "$W/mbv2.a8" 2>&1 | sed -n 's/^arena: \([0-9]*\) bytes.*/\1/p')"
    ae="$("$KILN" compile "$W/mbv2.qdq.u8.onnx" -o "$W/mbv2.ae" --no-pass=fold-qdq 2>&1 | sed -n 's/^arena: \([0-9]*\) bytes.*/\1/p')"
    if [ -n "$a8" ] && [ -n "$ae" ] && [ "$a8" -le $((ae / 3)) ]; then
        pass "mobilenet_v2 qdq arena: int8 $a8 bytes, float emulation $ae"
    else
        fail "mobilenet_v2 qdq arena: int8 '$a8' bytes, float emulation '$ae' (want <= 1/3)"
    fi
else
    echo "note: no mobilenet_v2.onnx in ~/.cache/kiln/models (run tests/models/run.py): skipped"
fi

# an op Kiln does not know
"$PY" - "$W/fancy.onnx" <<'PYEOF' || fail "the made-up-op model is written"
import sys
import onnx
from onnx import TensorProto as T, helper as h
g = h.make_graph([h.make_node("Relu", ["x"], ["a"]),
                  h.make_node("FancyOp", ["a"], ["b"], domain="com.microsoft", alpha=1.0),
                  h.make_node("Relu", ["b"], ["y"])], "g",
                 [h.make_tensor_value_info("x", T.FLOAT, [1, 4])],
                 [h.make_tensor_value_info("y", T.FLOAT, [1, 4])])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("com.microsoft", 1)]),
          sys.argv[1])
PYEOF
rc=0
"$KILN" compile "$W/fancy.onnx" -o "$W/fancy" >"$TMP/fancy.log" 2>&1 || rc=$?
first="$(grep -m1 'error' "$TMP/fancy.log" || true)"
if [ "$rc" -eq 1 ] && [ ! -e "$W/fancy" ] && [[ "$first" == *FancyOp* ]] && [[ "$first" == *com.microsoft* ]] &&
    [ "$(grep -c error "$TMP/fancy.log")" -eq 1 ]; then
    pass "an unknown com.microsoft op: one error naming it and its domain, exit 1, no folder"
else
    fail "an unknown com.microsoft op (exit $rc): $(cat "$TMP/fancy.log")"
fi
finish
