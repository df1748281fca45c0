#!/usr/bin/env bash
# Compile check of the CUDA backend (no GPU needed): kiln compile --target cuda of the
# real-model suite's models that the backend supports (from the export cache of
# tests/models/run.py) and of the small generated models of tests/cuda/make_models.py,
# then nvcc -Werror all-warnings of each bundle for sm_80 and sm_90a (the suite's models in
# fp32: sm_80; the suite's models but resnet18 as PTX alone, without ptxas) (compile only) and
# a link of its test main against cuBLASLt and the CUDA runtime; each model again with
# --precision fp16 (float16 storage) for sm_90a, and with --precision fp16 --conv implicit
# for sm_80 (and sm_90a on two models) where that lowering changes the bundle (it uses kc_igemm.cuh). Models with ops the CUDA
# backend lacks are listed as refused (kiln's diagnostics), not failed. KILN_JOBS (default:
# all cores) bundles compile side by side; their lines print in the models' order.
# usage: tests/cuda/nvcc_compile.sh KILN [WORK_DIR]; ends with "N passed, N failed".
set -u
KILN=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=${2:-$(mktemp -d)}
PY=${KILN_PYTHON:-/root/.cache/kiln/venv/bin/python}
NVCC=${NVCC:-nvcc}
ARCHS="80 90a"
JOBS=${KILN_JOBS:-$(nproc 2>/dev/null || echo 2)}
mkdir -p "$WORK/models" "$WORK/bundles"
passed=0 failed=0 refused=0

"$PY" "$HERE/make_models.py" "$WORK/models" || { echo "make_models.py failed"; exit 1; }
# the suite's export cache folder: the hash of export.py and quantize.py (tests/models/run.py)
CACHE=$("$PY" -c "import sys; sys.path.insert(0, '$ROOT/tests/models'); import run; print(run.cache_dir())" 2>/dev/null)
models=("$WORK"/models/*.onnx)
if [ -n "$CACHE" ] && [ -d "$CACHE" ]; then
    models+=("$CACHE"/*.onnx)
else
    echo "note: no model export cache ($CACHE); run tests/models/run.sh once to fill it"
fi
for repo_model in examples/models/tinycnn.onnx examples/digits/digits.onnx; do
    [ -f "$ROOT/$repo_model" ] && models+=("$ROOT/$repo_model")
done

# each model in fp32 for every architecture (the suite's models: for the first; below), with
# --precision fp16 (float16 storage) for the last one (tag _fp16), and with fp16 and the
# implicit-GEMM convolutions for the first (tag _fp16i), and for sm_90a too on cuda_convs and
# resnet18 (the wgmma and halo cores' code, whose compile is the slow part: two models cover
# its instantiations)
jobs=()
for m in "${models[@]}"; do
    [ -f "$m" ] || continue
    base=$(basename "$m" .onnx) suite=0
    [ -n "$CACHE" ] && [ "$(dirname "$m")" = "$CACHE" ] && suite=1   # one of the suite's
    case $base in
    cuda_convs | resnet18) fp16i_archs=$ARCHS ;;   # the wgmma cores' code: two models' worth
    *) fp16i_archs=${ARCHS%% *} ;;
    esac
    # fp32 for sm_90a on the generated and the repository's models, made to reach the
    # kernels, and on the suite's models whose fp32 bundles call a runtime function that none
    # of those do (vit_torchvision: Add+LayerNorm and attention of head size 24 in float; the
    # others' calls, compared by name, are the generated models' or, for resnet18_qdq's int8
    # kernels, its own _fp16 bundle's, built for sm_90a): the suite's fp32 sm_90a builds took
    # 274 s of the 1434 s (one core each) of its compiles in one CI run
    fp32_archs=$ARCHS
    [ "$suite" = 1 ] && [ "$base" != vit_torchvision ] && fp32_archs=${ARCHS%% *}
    # machine code (ptxas) for the generated and the repository's models, made to reach the
    # kernels, and for resnet18 (a real CNN's shapes on every convolution core); the other
    # suite models' bundles embed PTX alone (code=compute_XX: cicc checks their code and the
    # runtime's as instantiated, ptxas is skipped; it took about 40 % of such a compile)
    code=sass
    [ "$suite" = 1 ] && [ "$base" != resnet18 ] && code=ptx
    jobs+=("$m:fp32:$code:$fp32_archs" "$m:fp16:$code:${ARCHS##* }" "$m:fp16i:$code:$fp16i_archs")
done
# --dim NAME=1 for each open dim of a model's inputs (kiln refuses a --dim the model lacks)
open_dims() {
    "$KILN" inspect --json "$1" 2>/dev/null | "$PY" -c '
import json, sys
names = []
for v in json.load(sys.stdin)["inputs"]:
    for d in v.get("shape") or []:
        if isinstance(d, str) and d not in names:
            names.append(d)
print(" ".join("--dim %s=1" % n for n in names))'
}
# one job: kiln compile, then nvcc for each architecture; its lines go to stdout, which the
# caller sends to the job's own file, so that jobs can run side by side
run_job() {
    local job=$1 m rest prec code archs name tag conv out st arch t0
    local -a gen
    local -a dims
    m=${job%%:*} rest=${job#*:}
    prec=${rest%%:*} rest=${rest#*:}
    code=${rest%%:*} archs=${rest#*:}
    name=$(basename "$m" .onnx | tr -c 'A-Za-z0-9_\n' '_')
    tag=$name conv=im2col
    [ "$prec" = fp32 ] || tag=${name}_$prec
    [ "$prec" = fp16i ] && prec=fp16 conv=implicit
    out="$WORK/bundles/$tag"
    rm -rf "$out"
    read -r -a dims <<<"$(open_dims "$m")"
    st=0
    "$KILN" compile "$m" -o "$out" --name "$name" --target cuda --precision "$prec" \
        --conv "$conv" --test-main "${dims[@]}" >"$WORK/$tag.kiln.log" 2>&1 || st=$?
    if [ "$st" -eq 2 ]; then   # a usage error is this script's, not the backend's
        echo "FAIL $tag: kiln compile usage error:"
        sed 's/^/    /' "$WORK/$tag.kiln.log" | head -3
        return
    fi
    if [ "$st" -ne 0 ]; then
        [ "$conv" = implicit ] && return   # refused: already reported for fp16
        echo "REFUSED $tag: $(grep -c 'no CUDA kernel for this op' "$WORK/$tag.kiln.log") node(s) without a CUDA kernel:" \
             "$(grep -o '([A-Za-z.]*, opset' "$WORK/$tag.kiln.log" | sort | uniq -c | tr -s ' ' | tr '\n' ';' | head -c 300)"
        grep -q 'no CUDA kernel' "$WORK/$tag.kiln.log" || sed 's/^/    /' "$WORK/$tag.kiln.log" | head -3
        return
    fi
    if [ "$conv" = implicit ]; then
        # no convolution the lowering applies to: the _fp16 bundle's twin (an int8 bundle
        # includes kc_igemm.cuh through kc_qconv.cuh, so there the code itself is compared)
        if [ ! -f "$out/kc_igemm.cuh" ] ||
            { [ -f "$out/kc_qconv.cuh" ] && "$KILN" compile "$m" -o "$out.im2col" --name "$name" --target cuda --precision fp16 \
                --conv im2col "${dims[@]}" >/dev/null 2>&1 &&
                cmp -s "$out/$name.cu" "$out.im2col/$name.cu"; }; then
            rm -rf "$out" "$out.im2col"
            return
        fi
        rm -rf "$out.im2col"
    fi
    for arch in $archs; do
        gen=(-arch=sm_$arch)
        # PTX alone: -arch=compute_XX (with -gencode's form the host pass misses a device helper
        # that only that architecture's code calls, where -arch=sm_XX reports it: see
        # labs_build.sh)
        [ "$code" = ptx ] && gen=(-arch=compute_${arch})
        t0=$SECONDS
        if (cd "$out" && "$NVCC" -Werror all-warnings "${gen[@]}" -c "$name.cu" -o "$name.sm_$arch.o" \
                >"$WORK/$tag.sm_$arch.log" 2>&1 &&
            "$NVCC" -Werror all-warnings "${gen[@]}" "${name}_test_main.cu" "$name.sm_$arch.o" \
                -lcublasLt -lcudart -o "${name}_test.sm_$arch" >>"$WORK/$tag.sm_$arch.log" 2>&1); then
            # the seconds of the compile and link (one core): where this script's time goes
            if [ "$code" = ptx ]; then echo "ok      $tag sm_$arch (PTX, $((SECONDS - t0)) s)"
            else echo "ok      $tag sm_$arch ($((SECONDS - t0)) s)"; fi
        else
            echo "FAIL    $tag sm_$arch (log: $WORK/$tag.sm_$arch.log)"
            head -5 "$WORK/$tag.sm_$arch.log" | sed 's/^/    /'
        fi
    done
}
# KILN_JOBS jobs at a time (nvcc runs on one core), each into its own file, printed in order
mkdir -p "$WORK/jobs"
i=0
for job in "${jobs[@]}"; do
    [ "$(jobs -rp | wc -l)" -lt "$JOBS" ] || wait -n
    run_job "$job" >"$WORK/jobs/$i.out" 2>&1 &
    i=$((i + 1))
done
wait
for ((k = 0; k < i; k++)); do
    cat "$WORK/jobs/$k.out"
done >"$WORK/jobs.out"
cat "$WORK/jobs.out"
passed=$(grep -c '^ok ' "$WORK/jobs.out")
failed=$(grep -c '^FAIL' "$WORK/jobs.out")
refused=$(grep -c '^REFUSED' "$WORK/jobs.out")
echo "$refused model(s) refused (ops without CUDA kernels)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
