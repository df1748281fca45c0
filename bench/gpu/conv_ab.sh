#!/bin/sh
# A/B of two kilns' CUDA convolutions (fp16): the same exports of ResNet-50 and MobileNetV2
# compiled by a peer kiln (A, e.g. the session's starting one) and by the kiln under test
# (B), timed in one call on the GPU machine, then per-node ratios (conv_ab.py).
#   here:    bench/gpu/conv_ab.sh prepare KILN_A KILN_B OUT [BATCHES] [MODELS]
#            (BATCHES default 1,32,256; MODELS "resnet50 mobilenet_v2"; B also gets an
#            --conv im2col variant at batch 256 for the per-convolution peer)
#   GPU:     bench/gpu/conv_ab.sh run OUT RESULTS      (carry OUT)
#   here:    python3 bench/gpu/conv_ab.py RESULTS/a/results.json RESULTS/b/results.json
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
case "$1" in
prepare)
    A=$(realpath "$2") B=$(realpath "$3") OUT=$(realpath -m "$4")
    BATCHES=${5:-1,32,256} MODELS=${6:-"resnet50 mobilenet_v2"}
    PY=${PYTHON:-/usr/bin/python3}   # torch + torchvision for the export
    mkdir -p "$OUT/onnx"
    (cd "$HERE" && "$PY" -c "
import pathlib, sys, torch, prepare, models
torch.set_num_threads(2)
out = pathlib.Path(sys.argv[1])
for name in sys.argv[2:]:
    m = models.build(name)
    models.save_stats(out / 'bn_stats.npz', models.calibrate(m, name))
    prepare.export(name, m, out / f'{name}.onnx')
" "$OUT/onnx" $MODELS)
    export BENCH_PRECISIONS=fp16 BENCH_ONNX="$OUT/onnx"
    BENCH_BATCHES=$BATCHES BENCH_CONV= "$PY" "$HERE/prepare.py" "$A" "$OUT/a" $MODELS
    BENCH_BATCHES=$BATCHES BENCH_CONV= "$PY" "$HERE/prepare.py" "$B" "$OUT/b" $MODELS
    BENCH_BATCHES=256 BENCH_CONV=im2col "$PY" "$HERE/prepare.py" "$B" "$OUT/b" $MODELS
    rm -rf "$OUT/onnx" "$OUT/a.onnx" "$OUT/b.onnx"
    # the libraries here where nvcc is (saves the GPU machine's time)
    if command -v nvcc >/dev/null; then
        "$PY" "$HERE/run.py" "$OUT/a" /tmp --prebuild
        "$PY" "$HERE/run.py" "$OUT/b" /tmp --prebuild
    fi ;;
run)
    OUT=$2 RES=$3
    for d in a b; do
        BENCH_ACC_BATCH=256 python3 "$HERE/run.py" "$OUT/$d" "$RES/$d" --compile none \
            --skip-eager --models resnet50,mobilenet_v2 --deadline 150
    done ;;
*) echo "usage: conv_ab.sh prepare KILN_A KILN_B OUT [BATCHES] [MODELS] | run OUT RESULTS"; exit 2 ;;
esac
