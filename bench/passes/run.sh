#!/usr/bin/env bash
# Passes on against passes off, in one run: exports ResNet-50-style and MobileNetV2-style
# models with torch (Debian's /usr/bin/python3, torchvision, random seeded weights; cached
# under $HOME/.cache/kiln/bench) and takes the BERT-style encoder (bert_tiny) from the
# real-model suite's export cache (tests/models/run.py exports it when missing), compiles
# each with `kiln compile` twice (all passes, and --passes=none), builds both bundles at
# -O2 and runs them single-threaded on the same input. Prints per model: nodes
# before/after the pipeline, median latency of each, the ratio off/on, and the output
# checksums (equal up to float rounding). The layout column is a third build with all
# passes but "layout" (channels-last), and its ratio nolayout/on.
# Usage: bench/passes/run.sh [PATH/TO/kiln] [RUNS]   (RUNS defaults to 7; the encoder, which
# runs in well under a millisecond, gets BERT_RUNS_FACTOR times as many)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
KILN="${1:-$ROOT/build/kiln}"
RUNS="${2:-7}"
CC="${CC:-cc}"
CACHE="$HOME/.cache/kiln/bench"
PY="${KILN_PY:-/root/.cache/kiln/venv/bin/python}"
BERT_RUNS_FACTOR=100 # ~0.1 ms per run: many more runs for a stable median
BERT_SEQ=32          # tests/models/export.py TinyBert.SEQ and VOCAB
BERT_VOCAB=1000
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$CACHE"

export_model() { # name torchvision-constructor
    local onnx="$CACHE/$1.onnx"
    [ -f "$onnx" ] && return 0
    /usr/bin/python3 - "$2" "$onnx" <<'PY'
import sys, torch, torchvision
torch.manual_seed(0)
model = getattr(torchvision.models, sys.argv[1])(weights=None).eval()
x = torch.randn(1, 3, 224, 224)
# training=PRESERVE keeps BatchNormalization nodes as nodes (the exporter's own eval-mode
# folding would otherwise do Kiln's work before Kiln sees the model)
torch.onnx.export(model, x, sys.argv[2], opset_version=13, input_names=["input"],
                  output_names=["logits"], training=torch.onnx.TrainingMode.PRESERVE,
                  do_constant_folding=False)
PY
}

# the real-model suite's bert_tiny, exported into its cache when missing: prints its path
suite_model() {
    "$PY" - "$ROOT/tests/models" "$WORK" "$1" <<'PY'
import contextlib, io, pathlib, sys
sys.path.insert(0, sys.argv[1])
import run
models = [m for m in run.read_models(run.HERE / "models.txt") if m["name"] == sys.argv[3]]
with contextlib.redirect_stdout(io.StringIO()):
    paths, _ = run.ensure_models(models, pathlib.Path(sys.argv[2]))
print(paths[sys.argv[3]])
PY
}

# build_bundle dir name EXTRA_FLAGS... -> dir/bench
build_bundle() {
    local dir="$1" name="$2" up
    shift 2
    up="$(echo "$name" | tr a-z A-Z)"
    "$CC" -std=c99 -O2 -D_POSIX_C_SOURCE=200809L -D_ISOC11_SOURCE -I"$dir" -include "$dir/$name.h" \
        -DBENCH_NAME="$name" -DBENCH_ALIGN="${up}_ALIGN" \
        -DBENCH_WEIGHTS_SIZE="${up}_WEIGHTS_SIZE" -DBENCH_ARENA_SIZE="${up}_ARENA_SIZE" "$@" \
        "$ROOT/bench/passes/bench_main.c" "$dir/$name.c" -lm -o "$dir/bench"
}

# the layout column: all passes but "layout" (channels-last) against all passes
printf '%-14s %12s %12s %12s %12s %8s %13s %9s  %s\n' model "nodes-in" "nodes-on" "off-ms" \
    "on-ms" "off/on" "nolayout-ms" "layout" "checksums (off, on)"
for name in resnet50 mobilenet_v2 bert_tiny; do
    runs="$RUNS"
    if [ "$name" = bert_tiny ]; then
        onnx="$(suite_model "$name")"
        flags=(-DBENCH_SEQ="$BERT_SEQ" -DBENCH_VOCAB="$BERT_VOCAB" -DBENCH_OUTPUT_ELEMS=3)
        runs=$((RUNS * BERT_RUNS_FACTOR))
    else
        export_model "$name" "$name"
        onnx="$CACHE/$name.onnx"
        flags=(-DBENCH_INPUT_ELEMS=150528 -DBENCH_OUTPUT_ELEMS=1000)
    fi
    "$KILN" compile "$onnx" -o "$WORK/$name-on" --name m >"$WORK/$name-on.log"
    "$KILN" compile "$onnx" -o "$WORK/$name-off" --name m --passes=none >"$WORK/$name-off.log"
    "$KILN" compile "$onnx" -o "$WORK/$name-nolayout" --name m --no-pass=layout \
        >"$WORK/$name-nolayout.log"
    nodes_in="$(sed -n 's/.* (\([0-9]*\) before the passes).*/\1/p' "$WORK/$name-on.log")"
    nodes_on="$(sed -n 's/.*: \([0-9]*\) nodes (.*/\1/p' "$WORK/$name-on.log")"
    build_bundle "$WORK/$name-on" m "${flags[@]}"
    build_bundle "$WORK/$name-off" m "${flags[@]}"
    build_bundle "$WORK/$name-nolayout" m "${flags[@]}"
    # alternate off/on measurements so that both see the same machine state
    off="$(OMP_NUM_THREADS=1 "$WORK/$name-off/bench" "$WORK/$name-off/m_weights.bin" "$runs")"
    nol="$(OMP_NUM_THREADS=1 "$WORK/$name-nolayout/bench" "$WORK/$name-nolayout/m_weights.bin" \
        "$runs")"
    on="$(OMP_NUM_THREADS=1 "$WORK/$name-on/bench" "$WORK/$name-on/m_weights.bin" "$runs")"
    off_ms="$(echo "$off" | sed -n 's/median_ms=\([0-9.]*\).*/\1/p')"
    on_ms="$(echo "$on" | sed -n 's/median_ms=\([0-9.]*\).*/\1/p')"
    nol_ms="$(echo "$nol" | sed -n 's/median_ms=\([0-9.]*\).*/\1/p')"
    ratio="$(awk -v a="$off_ms" -v b="$on_ms" 'BEGIN { printf "%.2f", a / b }')"
    lratio="$(awk -v a="$nol_ms" -v b="$on_ms" 'BEGIN { printf "%.2f", a / b }')"
    printf '%-14s %12s %12s %12s %12s %8s %13s %9s  %s %s\n' "$name" "$nodes_in" "$nodes_on" \
        "$off_ms" "$on_ms" "${ratio}x" "$nol_ms" "${lratio}x" \
        "$(echo "$off" | sed 's/.*checksum=//')" \
        "$(echo "$on" | sed 's/.*checksum=//')"
done
echo "cc: $("$CC" --version | head -n 1); $(nproc) CPUs; single thread; -O2; $RUNS runs each" \
    "($((RUNS * BERT_RUNS_FACTOR)) for bert_tiny)"
