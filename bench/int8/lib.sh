# Shared by bench/int8's scripts (sourced; ROOT, CC and PY set by the caller): the suite model,
# the 8 seeded calibration samples every int8 bench uses, and the bench program of a bundle.
# shellcheck shell=bash

# int8_model NAME: the newest NAME.onnx of the model suite's TorchScript exports (folders named
# by a bare hash; the dynamo-, tf2onnx-... folders hold other exporters' spellings of a model,
# which a run of tests/models may have written later)
int8_model() {
    local m
    m="$(ls -t "$HOME"/.cache/kiln/models/*/"$1".onnx 2>/dev/null |
        grep -v '/models/[^/]*-[^/]*/' | head -n 1 || true)"
    [ -n "$m" ] || { echo "no $1.onnx in ~/.cache/kiln/models: run tests/models/run.py first" >&2; exit 1; }
    echo "$m"
}

# int8_samples DIR: 8 seeded (1, 3, 224, 224) float32 samples as DIR/N.npy
int8_samples() {
    "$PY" - "$1" <<'PY'
import os, sys
import numpy as np
os.makedirs(sys.argv[1])
rng = np.random.default_rng(20261125)
for i in range(8):
    np.save(f"{sys.argv[1]}/{i}.npy", rng.standard_normal((1, 3, 224, 224)).astype(np.float32))
PY
}

# int8_bench_cc DIR OUT [CC FLAGS...]: bench/int8/same_main.c linked with the bundle in DIR
# (named bm, a 224x224 RGB input, 1000 outputs)
int8_bench_cc() {
    local dir="$1" out="$2"
    shift 2
    "$CC" "$@" -D_POSIX_C_SOURCE=200809L -D_ISOC11_SOURCE -I"$dir" \
        -include "$dir/bm.h" -DBENCH_NAME=bm -DBENCH_ALIGN=BM_ALIGN \
        -DBENCH_WEIGHTS_SIZE=BM_WEIGHTS_SIZE -DBENCH_ARENA_SIZE=BM_ARENA_SIZE \
        -DBENCH_INPUT_ELEMS=150528 -DBENCH_OUTPUT_ELEMS=1000 \
        "$ROOT/bench/int8/same_main.c" "$dir/bm.c" -o "$out" -lm
}

# int8_ab_calibrate KILN: the A/B scripts' common start (they set W, a temporary folder): the
# 8 samples in W/cal, the suite model NAME (echoed), and one minmax calibration by KILN
# (a trailing :DIR, nodeab.sh's runtime override, ignored) into W/q.qparams
int8_ab_calibrate() {
    local model
    int8_samples "$W/cal"
    model="$(int8_model "$NAME")"
    "${1%%:*}" calibrate "$model" --data "$W/cal" --method minmax -o "$W/q.qparams" --quiet >&2
    echo "$model"
}
