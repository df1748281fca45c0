#!/usr/bin/env bash
# GPU machine: A/B of kc_qconv.cuh versions on the ResNet-50 bundles of
# bench/gpu/int8_prepare.py, in one call (a lent machine's start costs more than the runs).
# Each VARIANT is NAME:HEADER_DIR[:NVCC_FLAGS] -- a copy of the batch-1 and batch-256 INT8
# bundles with HEADER_DIR/kc_qconv.cuh (and flags such as -DKC_QSTAGES=3) -- timed by
# int8_time.cu beside the fp16 bundles, two rounds alternating, with the per-node profile
# (the NODES slowest, INT8_TIME_NODES); then tests/cuda/qconv_gpu.cu (correctness and
# --time) built against the first and the last variant's header, and, with CHECK_DIR (the
# --gpu-dir of tests/cuda/int8_bundles.sh), scripts/gpu-check-int8 on its cases plus
# PREP's ResNet-50 case, all with the last variant's headers (its -D flags written into the
# copy of kc_common.cuh as #defines). HEADER_DIR holds every runtime header (kc_qconv.cuh includes kc_common.cuh,
# kc_igemm.cuh and kc_nn.cuh), all copied over the bundle's. Writes OUT/timing.jsonl, OUT/qc.txt, OUT/check.txt.
# FP16_VARIANTS="NAME:FLAGS,..." adds fp16 bundles built with those nvcc flags (their own
# headers), timed as fp16_NAME beside the plain fp16 one (e.g. "pdl:-DKC_PDL=1").
# usage: bench/gpu/int8_ab.sh PREP OUT "NAME:DIR[:FLAGS],..." [CHECK_DIR]   (NODES=12 default)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PREP=$(realpath "$1")
OUT=$(realpath -m "$2")
CHECK=${4:-}
NODES=${NODES:-12}
HARNESS=$ROOT/bench/gpu/int8_time.cu
W=$(mktemp -d)
mkdir -p "$OUT"
IFS=',' read -ra VARS <<<"$3"
FVARS=()
[ -n "${FP16_VARIANTS:-}" ] && IFS=',' read -ra FVARS <<<"$FP16_VARIANTS"
hdr() { local d; d=$(echo "$1" | cut -d: -f2); realpath "$d"; }
# hdr_copy VARIANT FILE: the variant's kc_common.cuh with its -D flags as #defines ahead (so
# that the kernel test and the exactness check, built without the flags, see its knobs;
# kc_common.cuh is the first runtime header that a bundle or a test includes)
hdr_copy() {
    local name dir flags f d
    IFS=':' read -r name dir flags <<<"$1"
    { for f in ${flags:-}; do
          case $f in -D*=*) d=${f#-D}; echo "#define ${d%%=*} ${d#*=}" ;; -D*) echo "#define ${f#-D}" ;; esac
      done; cat "$dir/kc_common.cuh"; } >"$2"
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
first=$(hdr "${VARS[0]}") last=$(hdr "${VARS[${#VARS[@]}-1]}")
# the kernel test against the first and the last header (a copy beside each: the test's
# #include "kc_qconv.cuh" looks in the source's folder first)
for h in first last; do
    v=${VARS[0]}
    [ "$h" = last ] && v=${VARS[${#VARS[@]}-1]}
    mkdir -p "$W/qc_$h" && cp "${!h}"/*.cuh "$ROOT/tests/cuda/qconv_gpu.cu" \
        "$ROOT/tests/cuda/gpu_test.h" "$ROOT/tests/cuda/qconv_ref.h" "$W/qc_$h/" &&
        hdr_copy "$v" "$W/qc_$h/kc_common.cuh"
    (nvcc -std=c++17 -O3 -arch=sm_90a -I "$W/qc_$h" "$W/qc_$h/qconv_gpu.cu" -o "$W/qc_$h/t" >"$W/qc_$h.log" 2>&1 ||
        { echo "nvcc qconv_gpu ($h) failed"; head -5 "$W/qc_$h.log"; }) &
done
key() { python3 -c "import json; print(json.load(open('$PREP/index.json'))['$1']['weights'])"; }
build() { # DIR KEY FLAGS
    local U
    U=$(echo "$2" | tr a-z A-Z)
    (cd "$1" && nvcc -std=c++17 -O3 -arch=sm_90a $3 -DB="$2" -DPN="${U}_PROFILE_NODES" -include "$2.h" -I. \
        -o time "$HARNESS" "$2.cu" -lcublasLt >build.log 2>&1 || { echo "nvcc $1 failed"; head -5 build.log; })
}
for b in 1 256; do
    k=r50_b${b}_fp16
    cp -r "$PREP/$k" "$W/fp16_$b" && xz -dc "$PREP/weights/$(key $k)" >"$W/fp16_$b/w.bin"
    build "$W/fp16_$b" "$k" "" &
    for fv in "${FVARS[@]}"; do
        cp -r "$PREP/$k" "$W/fp16_${fv%%:*}_$b"
        build "$W/fp16_${fv%%:*}_$b" "$k" "${fv#*:}" &
    done
    k=r50_b${b}_int8
    xz -dc "$PREP/weights/$(key $k)" >"$W/int8_$b.bin"
    for v in "${VARS[@]}"; do
        IFS=':' read -r name dir flags <<<"$v"
        d=$W/${name}_$b
        cp -r "$PREP/$k" "$d" && cp "$dir"/*.cuh "$d/"
        build "$d" "$k" "${flags:-}" &
    done
done
wait
(cd "$W" && ./qc_last/t --time && echo "-- the first variant's kernel:" && ./qc_first/t --time) 2>&1 | tee "$OUT/qc.txt"
for round in 1 2; do
    for b in 256 1; do
        runs=$([ "$b" = 1 ] && echo 300 || echo 20)
        for v in "${VARS[@]}" fp16 "${FVARS[@]/#/fp16_}"; do
            name=${v%%:*}
            case $name in
            fp16) d=$W/fp16_$b wf=$W/fp16_$b/w.bin ;;
            fp16_*) d=$W/${name}_$b wf=$W/fp16_$b/w.bin ;;
            *) d=$W/${name}_$b wf=$W/int8_$b.bin ;;
            esac
            r=$(cd "$d" && INT8_TIME_NODES=$NODES ./time "$wf" $((b * 3 * 224 * 224)) "$runs")
            echo "{\"variant\": \"$name\", \"batch\": $b, \"round\": $round, \"result\": $r}"
        done
    done
done | tee "$OUT/timing.jsonl" | cut -c1-300
python3 - "$OUT/timing.jsonl" <<'PY'
import json, sys
best = {}
for line in open(sys.argv[1]):
    e = json.loads(line)
    k = (e["variant"], e["batch"])
    best[k] = min(best.get(k, 1e30), e["result"]["median_ms"])
for (v, b), ms in sorted(best.items(), key=lambda t: (t[0][1], t[1])):
    f = best.get(("fp16", b))
    print(f"batch {b:3d} {v:10s} {ms:8.3f} ms {b / ms * 1000:8.0f} img/s" + (f"  fp16/this {f / ms:.2f}x" if f else ""))
PY
if [ -n "$CHECK" ]; then
    mkdir -p "$W/chk/cases"
    cp -r "$CHECK"/cases/* "$PREP"/cases/* "$W/chk/cases/"
    ln -s "$PREP/weights" "$W/chk/weights"
    for d in "$W"/chk/cases/*/; do cp "$W"/qc_last/*.cuh "$d"; done
    bash "$ROOT/scripts/gpu-check-int8" "$W/chk" 2>&1 | tee "$OUT/check.txt"
fi
rm -rf "$W"
