#!/usr/bin/env bash
# FusedAttention on the CUDA target (no GPU needed): the fuse-attention pass runs for
# --target cuda (the target runs FusedAttention natively), and each attention of
# tests/cuda/make_models.py's cuda_fattn gets the kernel of kc_attn.cuh the emitter's rule
# gives it, read from the bundle (kc_attention<T, TC, D, DV> calls: TC true, the tensor-core
# kernel; D, DV > 0, the tiled float kernel; else one warp per row):
# fp16 with a head size in 16s up to 128, unit inner strides and rows on 16-byte boundaries
# takes the tensor cores, other head sizes up to 128 (fp32, D 40 with a K read through a
# stride) the tiled float kernel, D 160 one warp per row. The model's softmaxes must all be gone
# (fused). cuda_qkv: the packed projections of fuse-horizontal read through windows. usage:
# tests/cuda/attention_kernels.sh KILN; ends with "N passed, N failed".
set -u
KILN=$(realpath "$1")
PY=${KILN_PYTHON:-/root/.cache/kiln/venv/bin/python}
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0 failed=0
"$PY" "$HERE/make_models.py" "$TMP" >/dev/null || { echo "FAIL make_models.py"; exit 1; }

# want PRECISION "CALLS": the bundle's kc_attention calls in order, space-separated
want() {
    local prec=$1 calls=$2 out="$TMP/b_$1" got
    if ! "$KILN" compile "$TMP/cuda_fattn.onnx" -o "$out" --name m --target cuda \
            --precision "$prec" >"$out.log" 2>&1; then
        echo "FAIL cuda_fattn $prec: kiln refused it"; sed 's/^/     | /' "$out.log" | head -3
        failed=$((failed + 1)); return
    fi
    got=$(grep -o 'kc_attention<[^>]*>' "$out/m.cu" | sed 's/kc_attention<//; s/>//; s/ //g' |
          tr '\n' ' ' | sed 's/ $//')
    if [ "$got" = "$calls" ] && ! grep -q 'kc_softmax(' "$out/m.cu" &&
       [ -f "$out/kc_attn.cuh" ]; then
        echo "ok   cuda_fattn $prec: $got"; passed=$((passed + 1))
    else
        echo "FAIL cuda_fattn $prec: got '$got', wanted '$calls'" \
             "(softmax kernels: $(grep -c 'kc_softmax(' "$out/m.cu"))"
        failed=$((failed + 1))
    fi
}

# cuda_fattn's attentions a-g in order
f16="__half,true,32,32 __half,true,48,48 __half,false,40,24 __half,true,16,16"
f32="float,false,32,32 float,false,48,48 float,false,40,24 float,false,16,16"
want fp16 "$f16 __half,true,16,16 __half,true,128,128 __half,false,0,0"
want fp32 "$f32 float,false,16,16 float,false,128,128 float,false,0,0"
# --no-pass=fuse-attention: the unfused chain, no attention kernel
if "$KILN" compile "$TMP/cuda_fattn.onnx" -o "$TMP/nf" --name m --target cuda \
        --precision fp16 --no-pass=fuse-attention >/dev/null 2>&1 &&
   [ "$(grep -c 'kc_attention<' "$TMP/nf/m.cu")" -eq 0 ] &&
   [ "$(grep -c 'kc_softmax(' "$TMP/nf/m.cu")" -eq 7 ]; then
    echo "ok   cuda_fattn fp16 --no-pass=fuse-attention: 7 softmax kernels"; passed=$((passed + 1))
else
    echo "FAIL cuda_fattn fp16 --no-pass=fuse-attention"; failed=$((failed + 1))
fi
# cuda_qkv (fuse-horizontal): each input's projections one product, the attentions reading
# Q, K, V as windows of it (h: columns on 16-byte boundaries, tensor cores in fp16; i:
# heads of 12 at columns 36 and 72, the tiled float kernel), no Split left but the one
# whose output is a graph output (h's fourth product); and the C bundle against ONNX Runtime
for prec in fp16 fp32; do
    out="$TMP/qkv_$prec"
    T=__half TC=true
    [ "$prec" = fp32 ] && T=float TC=false
    if "$KILN" compile "$TMP/cuda_qkv.onnx" -o "$out" --name m --target cuda \
            --precision "$prec" >"$out.log" 2>&1; then
        got=$(grep -o 'kc_attention<[^>]*>' "$out/m.cu" | sed 's/kc_attention<//; s/>//; s/ //g' |
              tr '\n' ' ' | sed 's/ $//')
        mm=$(grep -c "kc_lt_matmul(" "$out/m.cu")
        splits=$(grep -c "^    /\* Split '" "$out/m.cu")
    else
        got="refused" mm=0 splits=0
    fi
    if [ "$got" = "$T,$TC,32,32 $T,false,12,12" ] && [ "$mm" -eq 2 ] && [ "$splits" -eq 1 ]; then
        echo "ok   cuda_qkv $prec: $got, 2 products, 1 Split"; passed=$((passed + 1))
    else
        echo "FAIL cuda_qkv $prec: got '$got', $mm products, $splits Splits" \
             "(wanted '$T,$TC,32,32 $T,false,12,12', 2, 1)"
        failed=$((failed + 1))
    fi
done
if "$KILN" validate "$TMP/cuda_qkv.onnx" >"$TMP/qkv_validate.log" 2>&1; then
    echo "ok   cuda_qkv C bundle vs ONNX Runtime"; passed=$((passed + 1))
else
    echo "FAIL cuda_qkv C bundle vs ONNX Runtime"; tail -5 "$TMP/qkv_validate.log"
    failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
