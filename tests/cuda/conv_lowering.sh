#!/usr/bin/env bash
# --conv of `kiln compile --target cuda` (no GPU needed): which lowering each convolution of
# a one-conv model gets, read from the bundle (kc_igemm_mma / kc_igemm_nhwc /
# kc_igemm_nhwc_any, kc_conv_small and kc_stem_tc calls). auto follows the rules of
# backend/cuda/cuda_ops.c: cuda_stem_input (fp16, one group, at most 4 input channels into
# 32 or 64, R*S*C <= 160, reading the graph input's Transpose: kc_stem_tc reads the input
# channels-first, float32 or float16 with --fp16-io, and no Transpose or Cast runs; not with
# --conv im2col; at least 1024 output rows N*OH) first; then use_conv_small (fp16, one group, a reduction R*S*C of at most 32,
# not with --conv im2col) first; then use_implicit_mma (the tensor-core implicit GEMM:
# channels in eights, more than one and at most 32 taps, at most 512 output channels, at
# least 96 blocks of 128 x 128 (x 64 for at most 64 channels); --conv implicit wherever
# channels are in eights); then use_implicit: fp16, one group, at most 128 output channels and at least 128 blocks of 128
# rows, and for channels not in eights (the element gathers) R*S*C >= K; im2col otherwise;
# plain 1x1 convolutions take none of them: cuBLASLt on X, but for use_conv1x1_small (fp16,
# one group, C even and at most 32, K in sixteens up to 240, at least 65536 pixels, not with
# --conv im2col: kc_conv1x1_small). usage:
# tests/cuda/conv_lowering.sh KILN; ends with "N passed, N failed".
set -u
KILN=$(realpath "$1")
PY=${KILN_PYTHON:-/root/.cache/kiln/venv/bin/python}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0 failed=0

# conv NAME C K HW KERNEL STRIDE GROUP [N]: a model x (N,C,HW,HW) -> Conv -> Relu -> y
conv() {
    "$PY" - "$TMP/$1.onnx" "$2" "$3" "$4" "$5" "$6" "$7" "${8:-1}" <<'PYEOF'
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save
path, C, K, HW, R, S, G, N = sys.argv[1], *map(int, sys.argv[2:])
w = np.random.default_rng(1).standard_normal((K, C // G, R, R)).astype(np.float32)
nodes = [helper.make_node("Conv", ["x", "w"], ["t"], pads=[R // 2] * 4, strides=[S, S], group=G),
         helper.make_node("Relu", ["t"], ["y"])]
g = helper.make_graph(nodes, "c", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                  [N, C, HW, HW])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                      [numpy_helper.from_array(w, "w")])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
PYEOF
}

# want LOWERING MODEL PRECISION CONV [KILN FLAG]: compiles and counts the implicit-GEMM calls
want() {
    local lowering=$1 m=$2 prec=$3 mode=$4 out="$TMP/b_$2_$3_$4${5:-}" n
    if ! "$KILN" compile "$TMP/$m.onnx" -o "$out" --name m --target cuda --precision "$prec" \
            --conv "$mode" ${5:-} >"$out.log" 2>&1; then
        echo "FAIL $m $prec --conv $mode: kiln refused it"; sed 's/^/     | /' "$out.log" | head -3
        failed=$((failed + 1)); return
    fi
    n=$(grep -cE 'kc_igemm_(nhwc(_any)?|mma)\(s' "$out/m.cu")
    mm=$(grep -c 'kc_igemm_mma(s' "$out/m.cu")
    k=$(grep -c 'kc_conv_small(s' "$out/m.cu")
    st=$(grep -c 'kc_stem_tc<' "$out/m.cu")
    c1=$(grep -c 'kc_conv1x1_small(s' "$out/m.cu")
    # the stem's input type, and the graph input's Transpose (a strided copy) and Cast gone
    ty=$(grep -o 'kc_stem_tc<[a-z_]*>' "$out/m.cu" | head -1)
    tr=$(grep -c 'done by the stem convolution' "$out/m.cu") # the Transpose and the Cast
    if { [ "$lowering" = implicit ] && [ "$n" -eq 1 ] && [ "$mm" -eq 0 ] && [ "$k" -eq 0 ] && [ "$st" -eq 0 ]; } ||
       { [ "$lowering" = mma ] && [ "$mm" -eq 1 ] && [ "$k" -eq 0 ] && [ "$st" -eq 0 ]; } ||
       { [ "$lowering" = small ] && [ "$n" -eq 0 ] && [ "$k" -eq 1 ] && [ "$st" -eq 0 ]; } ||
       { [ "$lowering" = stem ] && [ "$n" -eq 0 ] && [ "$k" -eq 0 ] && [ "$st" -eq 1 ] &&
         { { [ "$ty" = "kc_stem_tc<float>" ] && [ "$tr" -eq 2 ] && [ "${5:-}" != --fp16-io ]; } ||
           { [ "$ty" = "kc_stem_tc<__half>" ] && [ "$tr" -eq 1 ] && [ "${5:-}" = --fp16-io ]; }; }; } ||
       { [ "$lowering" = pw1x1 ] && [ "$n" -eq 0 ] && [ "$k" -eq 0 ] && [ "$st" -eq 0 ] && [ "$c1" -eq 1 ]; } ||
       { [ "$lowering" = im2col ] && [ "$n" -eq 0 ] && [ "$k" -eq 0 ] && [ "$st" -eq 0 ] && [ "$c1" -eq 0 ]; }; then
        echo "ok   $m $prec --conv $mode ${5:-}: $lowering"; passed=$((passed + 1))
    else
        echo "FAIL $m $prec --conv $mode ${5:-}: $n implicit-GEMM, $k small-reduction, $st stem ($ty, $tr nodes folded), $c1 small 1x1 call(s), wanted $lowering"
        failed=$((failed + 1))
    fi
}

conv k64_big 64 64 128 3 1 1      # 16384 rows x 64 columns: 128 blocks
conv k64_98 64 64 112 3 1 1       # 12544 rows: 98 blocks
conv k64_small 64 64 104 3 1 1    # 10816 rows: 85 blocks, but the halo core's layer
conv k64_56 64 64 56 3 1 1        # ResNet-50's layer1 3x3 at batch 1: 25 blocks, halo core
conv k64s2_56 64 64 112 3 2 1     # stride 2, 3136 rows: not the halo core's
conv k128_56 64 128 56 3 1 1      # 128 output channels, 3136 rows: not the halo core's
conv k128_s2 64 128 256 3 2 1     # stride 2: 16384 rows x 128 columns
conv k256_big 64 256 128 3 1 1    # 256 output channels: 256 blocks
conv k512_big 64 512 128 3 1 1    # 512 output channels: 1024 blocks
conv k1024 64 1024 64 3 1 1       # 1024 output channels: cuBLASLt
conv k256_small 64 256 64 3 1 1   # 4096 rows x 256 columns: 64 blocks
conv pw_s2 64 64 256 1 2 1        # 1x1 stride 2: 16384 rows, the WMMA kernel
conv c12 12 64 128 3 1 1          # channels not in eights: element gathers (108 >= 64)
conv stem7 3 64 256 7 2 1 8       # ResNet's stem: 147, 1024 rows: the input as it comes
conv stem7b1 3 64 256 7 2 1       # 128 rows: element gathers (147 >= 64) on the Transpose
conv c3k64 3 64 256 3 2 1 8       # 3x3x3 = 27: the stem kernel on the graph input
conv c3k64b1 3 64 256 3 2 1       # 128 rows: the small-reduction kernel
conv c4k64 4 64 256 3 2 1 8       # 3x3x4 = 36: the stem kernel on the graph input
conv c5k64 5 64 256 3 2 1 8       # 5 channels: no stem kernel; 45 < 64: im2col
conv stem7k48 3 48 256 7 2 1 8    # 48 output channels: no stem kernel, element gathers
conv pw16 16 96 128 1 1 1         # plain 1x1 of 16 channels, 16384 pixels: cuBLASLt on X
conv pw16b4 16 96 128 1 1 1 4     # 65536 pixels: kc_conv1x1_small
conv pw32k16 32 16 64 1 1 1 16    # 32 -> 16 (a projection): kc_conv1x1_small
conv pw34 34 96 64 1 1 1 16       # 34 channels: cuBLASLt on X
conv pw16k40 16 40 64 1 1 1 16    # 40 output channels, not in sixteens: cuBLASLt
conv grouped 64 64 128 3 1 2      # two groups
conv pw 64 64 128 1 1 1           # plain 1x1: read directly, neither lowering

want mma k64_big fp16 auto
want mma k64_98 fp16 auto
want mma k64_small fp16 auto
want mma k64_56 fp16 auto
want im2col k64_56 fp16 im2col
want im2col k64s2_56 fp16 auto
want im2col k128_56 fp16 auto
want mma k64_small fp16 implicit
want mma k128_s2 fp16 auto
want mma k256_big fp16 auto
want mma k512_big fp16 auto
want im2col k1024 fp16 auto
want mma k1024 fp16 implicit
want im2col k256_small fp16 auto
want implicit pw_s2 fp16 auto
want mma pw_s2 fp16 implicit
want im2col k64_big fp16 im2col
want im2col k64_big fp32 auto
want im2col k64_big fp32 implicit
want implicit c12 fp16 implicit
want implicit c12 fp16 auto
want im2col c12 fp16 im2col
want stem stem7 fp16 auto
want stem stem7 fp16 auto --fp16-io
want im2col stem7 fp16 im2col
want implicit stem7k48 fp16 auto
want implicit stem7b1 fp16 auto
want small c3k64b1 fp16 auto
want stem c3k64 fp16 auto
want stem c3k64 fp16 implicit
want stem c3k64 fp16 auto --fp16-io
want im2col c3k64 fp16 im2col
want im2col c3k64 fp32 auto
want stem c4k64 fp16 auto
want stem c4k64 fp16 implicit
want im2col c5k64 fp16 auto
want implicit c5k64 fp16 implicit
want stem stem7 fp16 implicit
want im2col pw16 fp16 auto
want pw1x1 pw16b4 fp16 auto
want pw1x1 pw16b4 fp16 implicit
want im2col pw16b4 fp16 im2col
want im2col pw16b4 fp32 auto
want pw1x1 pw32k16 fp16 auto
want im2col pw34 fp16 auto
want im2col pw16k40 fp16 auto
want im2col grouped fp16 implicit
want im2col pw fp16 implicit
want im2col pw fp16 auto
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
