#!/usr/bin/env bash
# Times the ops that the CUDA backend runs through the C kernels on the device (the generic
# path: docs/cuda.md) in a segmentation-style head, compiled by two kilns, in one run on the
# GPU machine: per-node milliseconds from NAME_cuda_profile (median of 5 eager runs) and
# whether both bundles give the same outputs. Before the element-parallel launch these
# nodes ran on one device thread.
#   here:  bench/gpu/fallback_ops.sh prepare KILN_BEFORE KILN_AFTER OUT   (needs the venv)
#   there: bench/gpu/fallback_ops.sh run OUT                              (nvcc, a GPU)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
case "${1:-}" in
prepare)
    BEFORE=$(realpath "$2") AFTER=$(realpath "$3") OUT=$4
    PY=${KILN_PYTHON:-$HOME/.cache/kiln/venv/bin/python}
    mkdir -p "$OUT"
    "$PY" - "$OUT/seg.onnx" <<'PYEOF'
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save
rng = np.random.default_rng(0)
def const(name, a):
    return numpy_helper.from_array(np.asarray(a), name)
inits = [const("w", (rng.standard_normal((64, 32, 4, 4)) * 0.05).astype(np.float32)),
         const("b", rng.standard_normal(32).astype(np.float32)),
         const("scales", np.array([1, 1, 2, 2], np.float32)),
         const("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)),
         const("gamma", np.ones(32, np.float32)), const("beta", np.zeros(32, np.float32)),
         const("axes", np.array([1], np.int64))]
nodes = [helper.make_node("ConvTranspose", ["x", "w", "b"], ["up1"], name="deconv",
                          kernel_shape=[4, 4], strides=[2, 2], pads=[1, 1, 1, 1]),
         helper.make_node("Resize", ["up1", "", "scales"], ["up2"], name="resize",
                          mode="linear"),
         helper.make_node("Pad", ["up2", "pads"], ["padded"], name="pad", mode="reflect"),
         helper.make_node("InstanceNormalization", ["padded", "gamma", "beta"], ["norm"],
                          name="instnorm"),
         helper.make_node("ReduceMean", ["norm", "axes"], ["mean"], name="reducemean"),
         helper.make_node("ArgMax", ["norm"], ["label"], name="argmax", axis=1)]
g = helper.make_graph(nodes, "seg",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 64, 64])],
                      [helper.make_tensor_value_info("mean", TensorProto.FLOAT, None),
                       helper.make_tensor_value_info("label", TensorProto.INT64, None)], inits)
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), sys.argv[1])
PYEOF
    for k in before after; do
        kiln=$BEFORE; [ $k = after ] && kiln=$AFTER
        "$kiln" compile "$OUT/seg.onnx" -o "$OUT/$k" --name seg --target cuda 2>"$OUT/$k.log" >/dev/null
        cp "$HERE/fallback_ops_main.cu" "$OUT/$k/"
    done
    cp "$0" "$OUT/"
    echo "prepared $OUT"
    ;;
run)
    OUT=$2
    for k in before after; do
        (cd "$OUT/$k" && nvcc -O3 -std=c++17 -arch=native -I. -o prof fallback_ops_main.cu seg.cu \
            -lcublasLt -lcublas 2>&1 | grep -v "warning #" | head -5 || true)
    done
    for k in before after; do
        echo "== $k"; (cd "$OUT/$k" && ./prof seg_weights.bin "$OUT/$k.out")
    done
    # ConvTranspose sums in another order on the device now (a gather, not C's scatter):
    # the outputs agree to float rounding, not byte for byte
    python3 - "$OUT/before.out" "$OUT/after.out" <<'PYEOF'
import sys
import numpy as np
n = 258 * 258
a, b = (np.fromfile(f, np.uint8) for f in sys.argv[1:3])
ma, mb = a[:4 * n].view(np.float32), b[:4 * n].view(np.float32)
la, lb = a[4 * n:].view(np.int64), b[4 * n:].view(np.int64)
print(f"outputs: mean max |before - after| {np.abs(ma - mb).max():.2e} "
      f"(max |mean| {np.abs(ma).max():.2e}); argmax labels equal {100 * (la == lb).mean():.2f}%")
PYEOF
    ;;
*) echo "usage: $0 prepare KILN_BEFORE KILN_AFTER OUT | run OUT" >&2; exit 2 ;;
esac
