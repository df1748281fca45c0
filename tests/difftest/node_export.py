#!/usr/bin/env python3
"""Writes difftest models in the ONNX node-test layout, so that the conformance runners run
them: OUT/difftest_seedN/model.onnx, test_data_set_0/input_K.pb and output_K.pb (ONNX
Runtime's outputs on the harness's own inputs) and tolerance.json, the harness's absolute
tolerance per output (its scaled atol, the float16 rule where an output goes through
float16, plus the conditioning probe's spread). The GPU run of the differential test:

  tests/difftest/node_export.py 0:200 build/difftest-nodes
  KILN_NODE_DIR=build/difftest-nodes scripts/conformance --target cuda --prepare-only DIR
  (on the GPU machine) python3 scripts/gpu-conformance DIR

Seeds whose model ONNX Runtime cannot run are left out (the harness counts them invalid).
usage: tests/difftest/node_export.py A:B OUT
"""
import json
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen  # noqa: E402
import harness  # noqa: E402


def output_atol(ref, noisy, half):
    """The harness's absolute bound for one output, as one number: atol times the output's
    scale, plus NOISE_FACTOR times the largest change the conditioning probe saw."""
    # float16's rtol is wider than the runners' 1e-3: the difference joins atol (|ref| <= scale)
    atol = (harness.ATOL_F16 + harness.RTOL_F16 - harness.RTOL
            if half or ref.dtype == np.float16 else harness.ATOL)
    if ref.dtype.kind not in "fc":
        return 0.0
    r = ref.astype(np.float64)
    finite = r[np.isfinite(r)]
    scale = max(1.0, float(np.abs(finite).max())) if finite.size else 1.0
    with np.errstate(invalid="ignore"):
        spread = np.abs(noisy.astype(np.float64) - r)
    spread = spread[np.isfinite(spread)]
    return atol * scale + harness.NOISE_FACTOR * (float(spread.max()) if spread.size else 0.0)


def export(seed, out_root):
    model, _ = gen.generate(seed)
    feeds = harness.draw_inputs(model, seed)
    try:
        refs = harness.run_ort(model, feeds)
        noisy = harness.run_ort(model, harness.perturbed(feeds, seed))
    except Exception as e:  # noqa: BLE001 (ONNX Runtime raises many kinds)
        return "invalid: %s" % str(e).splitlines()[0][:120]
    half = harness.f16_outputs(model)
    stated = harness.metadata(model).get("atol", {})  # one quantization step, where stated
    d = os.path.join(out_root, "difftest_seed%d" % seed)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, vi in enumerate(harness.graph_inputs(model)):
        t = numpy_helper.from_array(feeds[vi.name], vi.name)
        open(os.path.join(d, "test_data_set_0", "input_%d.pb" % k), "wb").write(
            t.SerializeToString())
    atols = []
    for k, o in enumerate(model.graph.output):
        ref = np.asarray(refs[o.name])
        t = numpy_helper.from_array(ref, o.name)
        open(os.path.join(d, "test_data_set_0", "output_%d.pb" % k), "wb").write(
            t.SerializeToString())
        atols.append(output_atol(ref, np.asarray(noisy[o.name]), o.name in half) +
                     float(stated.get(o.name, 0.0)))
    json.dump({"atol": atols, "rtol_note": "the runners' rtol (1e-3) applies as well"},
              open(os.path.join(d, "tolerance.json"), "w"))
    return "ok"


def main(argv):
    if len(argv) != 3 or ":" not in argv[1]:
        sys.exit(__doc__.strip().splitlines()[-1])
    a, b = (int(x) for x in argv[1].split(":"))
    os.makedirs(argv[2], exist_ok=True)
    n_ok = 0
    for seed in range(a, b):
        why = export(seed, argv[2])
        n_ok += why == "ok"
        if why != "ok":
            print("seed %d: %s" % (seed, why))
    print("%d of %d seeds written to %s" % (n_ok, b - a, argv[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
