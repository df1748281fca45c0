#!/usr/bin/env bash
# The CUDA int8 path without a GPU (docs/cuda.md, "INT8"): the CNN and the attention block
# of make_int8_models.py calibrated by kiln calibrate and compiled with --int8 --target cuda
# (the attention as one kc_qattention; without fuse-attention, its products as kc_qmatmul),
# and the model suite's
# pre-quantized ResNet-18 (QDQ, when the export cache has it) compiled with --target cuda:
# every convolution and Gemm runs as an int8 tensor-core kernel (kc_qconv / kc_qdwconv),
# nothing takes the generic path (also with --precision fp16), and the CNN's bundle builds
# with nvcc -Werror all-warnings for sm_80 and sm_90 and its test main links (the cached
# models' bundles are built by nvcc_compile.sh, which compiles the QDQ ResNet-18 too).
# With --gpu-dir DIR it also writes DIR/cases/NAME/ for scripts/gpu-check-int8 (the GPU
# machine): each CUDA bundle with K seeded inputs (in.bin) and the C int8 bundle's outputs
# on them (ref.bin, built here with cc -O2), and adds MobileNetV2 from the cache calibrated
# on 8 seeded inputs.
# usage: tests/cuda/int8_bundles.sh KILN [WORK] [--gpu-dir DIR]; ends with "N passed, N failed".
set -u
KILN=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
if [ -n "${2:-}" ]; then WORK=$2; else WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT; fi
GPU=""
[ "${3:-}" = "--gpu-dir" ] && GPU=$(realpath -m "$4")
PY=${KILN_PYTHON:-/root/.cache/kiln/venv/bin/python}
NVCC=${NVCC:-nvcc}
K=8   # samples per GPU check case
mkdir -p "$WORK"
passed=0 failed=0
ok() { echo "ok   $*"; passed=$((passed + 1)); }
bad() { echo "FAIL $*"; failed=$((failed + 1)); }

"$PY" "$HERE/make_int8_models.py" "$WORK" || { echo "make_int8_models.py failed"; exit 1; }
CACHE=$("$PY" -c "import sys; sys.path.insert(0, '$ROOT/tests/models'); import run; print(run.cache_dir())" 2>/dev/null)

# compile NAME MODEL EXPECT_QCONV EXPECT_QDW [kiln args...]
compile() {
    local name=$1 model=$2 want=$3 wantdw=$4
    shift 4
    local out="$WORK/$name"
    rm -rf "$out"
    if ! "$KILN" compile "$model" -o "$out" --name "$name" --target cuda --test-main "$@" \
        >"$WORK/$name.log" 2>&1; then
        bad "$name: kiln compile --target cuda"
        sed 's/^/    /' "$WORK/$name.log" | tail -5
        return 1
    fi
    local nq ndw
    nq=$(grep -c 'rc = kc_qconv\(_f32nchw\)\?(' "$out/$name.cu")
    ndw=$(grep -c 'rc = kc_qdwconv(' "$out/$name.cu")
    if [ "$nq" = "$want" ] && [ "$ndw" = "$wantdw" ] && ! grep -q 'one GPU thread' "$WORK/$name.log" &&
        ! grep -q 'KC_C_RUNTIME' "$out/$name.cu"; then
        ok "$name: $nq kc_qconv, $ndw kc_qdwconv, no generic node"
    else
        bad "$name: $nq kc_qconv (want $want), $ndw kc_qdwconv (want $wantdw), generic: $(grep -c 'one GPU thread' "$WORK/$name.log")"
    fi
    # nvcc for the CNN; the cached models' bundles are nvcc_compile.sh's (also int8 now)
    [ "$name" = cnn8 ] || [ "${name#attn8}" != "$name" ] || [ -n "$GPU" ] || return 0
    # the two architectures side by side (nvcc runs on one core)
    local a pid80 pid90
    for a in 80 90; do
        (cd "$out" && "$NVCC" -std=c++17 -arch=sm_$a -Werror all-warnings -c "$name.cu" -o "$name.$a.o") \
            >"$WORK/$name.nvcc$a.log" 2>&1 &
        eval "pid$a=\$!"
    done
    for a in 80 90; do
        if eval "wait \$pid$a"; then
            ok "$name: nvcc sm_$a"
        else
            bad "$name: nvcc sm_$a"
            sed 's/^/    /' "$WORK/$name.nvcc$a.log" | head -8
        fi
    done
    if (cd "$out" && "$NVCC" -std=c++17 -arch=sm_90 -o "$name.test" "$name.90.o" "${name}_test_main.cu" -lcublasLt) \
        >"$WORK/$name.link.log" 2>&1; then
        ok "$name: test main links"
    else
        bad "$name: test main links"
        sed 's/^/    /' "$WORK/$name.link.log" | head -5
    fi
    rm -f "$out"/*.o "$out/$name.test"
}

# case NAME MODEL [kiln args...]: the GPU check's folder (C reference outputs on K inputs)
gpu_case() {
    local name=$1 model=$2
    shift 2
    local d="$GPU/cases/$name" c="$WORK/$name.c"
    rm -rf "$d" "$c"
    mkdir -p "$GPU/cases"
    cp -r "$WORK/$name" "$d"
    "$KILN" compile "$model" -o "$c" --name "$name" --test-main "$@" >/dev/null 2>&1 &&
        cc -O2 -std=c99 -o "$c/t" "$c/$name.c" "$c/${name}_test_main.c" -lm ||
        { bad "$name: C int8 bundle for the reference"; return; }
    "$PY" - "$model" "$d/in.bin" "$K" "$@" <<'PYEOF' || { bad "$name: inputs"; return; }
import sys, numpy as np, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
dims = {a.split("=")[0]: int(a.split("=")[1]) for a in sys.argv[4:] if "=" in a and not a.startswith("-") and not a.endswith(".qparams")}
v = m.graph.input[0].type.tensor_type.shape.dim
shape = [d.dim_value if d.dim_value else dims.get(d.dim_param, 1) for d in v]
rng = np.random.default_rng(4242)
np.concatenate([rng.standard_normal(shape).astype(np.float32).ravel() for _ in range(int(sys.argv[3]))]).tofile(sys.argv[2])
PYEOF
    if "$c/t" "$c/${name}_weights.bin" "$d/in.bin" "$d/ref.bin"; then
        ok "$name: C reference outputs on $K inputs"
    else
        bad "$name: C reference outputs"
    fi
}

"$KILN" calibrate "$WORK/cnn8.onnx" --data "$WORK/data" -o "$WORK/cnn8.qparams" --quiet >/dev/null 2>&1 ||
    bad "kiln calibrate cnn8"
# 7 convolutions (one depthwise) and the Gemm: 7 kc_qconv, 1 kc_qdwconv
compile cnn8 "$WORK/cnn8.onnx" 7 1 --int8 "$WORK/cnn8.qparams" &&
    [ -n "$GPU" ] && gpu_case cnn8 "$WORK/cnn8.onnx" --int8 "$WORK/cnn8.qparams"
# the stem reads the float32 NCHW input: its QuantizeLinear and Transpose fold into the gather
if grep -q 'rc = kc_qconv_f32nchw(s, in->x, ' "$WORK/cnn8/cnn8.cu" &&
    [ "$(grep -c 'done by the stem convolution that reads the graph input' "$WORK/cnn8/cnn8.cu")" = 2 ] &&
    ! grep -q 'kc_quantize_u8(s, [0-9]*, in->' "$WORK/cnn8/cnn8.cu"; then
    ok "cnn8: the input's QuantizeLinear and Transpose fold into the stem (kc_qconv_f32nchw)"
else
    bad "cnn8: the input's QuantizeLinear and Transpose fold into the stem"
fi
# with --precision fp16 the int8 nodes are the same and the Q/DQ edges stay float32: the
# input's QuantizeLinear folded into the stem as above, the output's DequantizeLinear a kernel
if "$KILN" compile "$WORK/cnn8.onnx" -o "$WORK/cnn8h" --target cuda --precision fp16 \
    --int8 "$WORK/cnn8.qparams" >"$WORK/cnn8h.log" 2>&1 &&
    [ "$(grep -c 'rc = kc_q[a-z]*conv\(_f32nchw\)\?(' "$WORK/cnn8h/cnn8.cu")" = 8 ] &&
    grep -q 'rc = kc_qconv_f32nchw(s, in->x, ' "$WORK/cnn8h/cnn8.cu" &&
    grep -q 'rc = kc_dequantize_u8(s, [0-9]*, .*, out->' "$WORK/cnn8h/cnn8.cu" &&
    ! grep -q 'one GPU thread' "$WORK/cnn8h.log"; then
    ok "cnn8 --precision fp16: the same int8 kernels, the input folded into the stem, a float32 DequantizeLinear kernel"
else
    bad "cnn8 --precision fp16"
fi
# attn8: the projections as kc_qconv (4) and the attention as one kc_qattention
"$KILN" calibrate "$WORK/attn8.onnx" --data "$WORK/attn-data" -o "$WORK/attn8.qparams" --quiet >/dev/null 2>&1 ||
    bad "kiln calibrate attn8"
if compile attn8 "$WORK/attn8.onnx" 4 0 --int8 "$WORK/attn8.qparams"; then
    if [ "$(grep -c 'rc = kc_qattention(' "$WORK/attn8/attn8.cu")" = 1 ]; then
        ok "attn8: the attention as one kc_qattention"
    else
        bad "attn8: the attention as one kc_qattention"
    fi
    [ -n "$GPU" ] && gpu_case attn8 "$WORK/attn8.onnx" --int8 "$WORK/attn8.qparams"
fi
# attn8u: the same block without fuse-attention: its two products of activations (Q K^T over
# 3 heads, P V) as kc_qmatmul
if compile attn8u "$WORK/attn8.onnx" 4 0 --int8 "$WORK/attn8.qparams" --no-pass=fuse-attention; then
    if [ "$(grep -c 'rc = kc_qmatmul(' "$WORK/attn8u/attn8u.cu")" = 2 ]; then
        ok "attn8u: the two products of activations as kc_qmatmul"
    else
        bad "attn8u: the two products of activations as kc_qmatmul"
    fi
    [ -n "$GPU" ] && gpu_case attn8u "$WORK/attn8.onnx" --int8 "$WORK/attn8.qparams" --no-pass=fuse-attention
fi
if [ -n "$CACHE" ] && [ -f "$CACHE/resnet18_qdq.onnx" ]; then
    # 20 convolutions and the Gemm
    compile resnet18_qdq "$CACHE/resnet18_qdq.onnx" 21 0 &&
        [ -n "$GPU" ] && gpu_case resnet18_qdq "$CACHE/resnet18_qdq.onnx"
else
    echo "note: no resnet18_qdq.onnx in the export cache ($CACHE); run tests/models/run.sh once"
fi
if [ -n "$GPU" ] && [ -n "$CACHE" ] && [ -f "$CACHE/mobilenet_v2.onnx" ]; then
    mkdir -p "$WORK/mnv2data"
    "$PY" -c "
import numpy as np
r = np.random.default_rng(7)
for i in range(8): np.save('$WORK/mnv2data/s%d.npy' % i, r.standard_normal((1, 3, 224, 224)).astype(np.float32))"
    "$KILN" calibrate "$CACHE/mobilenet_v2.onnx" --data "$WORK/mnv2data" -o "$WORK/mnv2.qparams" --quiet \
        >/dev/null 2>&1 || bad "kiln calibrate mobilenet_v2"
    # 52 convolutions (17 depthwise) and the Gemm
    compile mobilenet_v2 "$CACHE/mobilenet_v2.onnx" 36 17 --int8 "$WORK/mnv2.qparams" &&
        gpu_case mobilenet_v2 "$CACHE/mobilenet_v2.onnx" --int8 "$WORK/mnv2.qparams"
fi
if [ -n "$GPU" ] && [ -n "$CACHE" ] && [ -f "$CACHE/efficientnet_b0.onnx" ]; then
    # SiLU tables and the squeeze-excitation's broadcast QMul (kc_qmul_bcast) between the
    # convolutions: 66 kc_qconv (the SE's 1x1 products among them) and 16 depthwise
    "$KILN" calibrate "$CACHE/efficientnet_b0.onnx" --data "$WORK/mnv2data" -o "$WORK/effb0.qparams" \
        --quiet >/dev/null 2>&1 || bad "kiln calibrate efficientnet_b0"
    compile efficientnet_b0 "$CACHE/efficientnet_b0.onnx" 66 16 --int8 "$WORK/effb0.qparams" &&
        gpu_case efficientnet_b0 "$CACHE/efficientnet_b0.onnx" --int8 "$WORK/effb0.qparams"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
