#!/usr/bin/env bash
# Prepares bench/gpu/pair (no GPU needed): compiles bench/gpu's BERT-base (ONNX exported by
# bench/gpu/prepare.py, or models.py through torch.onnx) twice for CUDA fp16 at batch 1 into
# OUT/bb0 and OUT/bb1, bb0 with the extra kiln switches FLAGS0 (default: the state before
# fuse-horizontal, --no-pass=fuse-horizontal) and bb1 with FLAGS1 (default: none), stores
# their weights xz-compressed (about 170 KB each: models.py's periodic weights) and copies
# pair_timing.cu and run.sh beside them. Carry OUT to the GPU machine and run OUT/run.sh.
# usage: bench/gpu/pair/prepare.sh KILN BERT_BASE.onnx OUT
set -euo pipefail
KILN="$1" ONNX="$2" OUT="$3"
HERE="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$OUT"
for i in 0 1; do
    flags="FLAGS$i"
    [ "$i" = 0 ] && def="--no-pass=fuse-horizontal" || def=""
    rm -rf "$OUT/bb$i"
    # shellcheck disable=SC2086 # FLAGSi is a list of switches
    "$KILN" compile "$ONNX" -o "$OUT/bb$i" --name "bb$i" --target cuda --precision fp16 \
        --dim batch=1 ${!flags-$def}
    xz -T2 -6 --lzma2=dict=512MiB -c "$OUT/bb$i/bb${i}_weights.bin" >"$OUT/bb$i.weights.xz"
    rm "$OUT/bb$i/bb${i}_weights.bin"
done
cp "$HERE/pair_timing.cu" "$HERE/run.sh" "$OUT/"
