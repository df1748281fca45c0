#!/usr/bin/env python3
"""Helpers of the edge tests (tests/edge/*.sh), run with the pinned venv python.

  edge.py suite-model NAME DIR   the model suite's export of NAME (tests/models/run.py's
                                 cache, exported with Debian's python3 if missing): prints
                                 its path and writes the suite's seeded input for it as raw
                                 files DIR/in_0.bin, ... (the suite's own draw, so the figures
                                 are those of docs/models.md's input)
  edge.py compare REF GOT CLASSES
                                 two raw float32 output files of one bundle on two machines:
                                 max abs difference, within the suite's tolerance
                                 (rtol 1e-3, atol 1e-4) or not, and top-1 agreement over rows
                                 of CLASSES; exits 1 when not within tolerance
"""
import pathlib
import sys
import zlib

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tests" / "models"))
import run as suite  # noqa: E402  (tests/models/run.py: the cache, the draws, the tolerance)


def suite_model(name, out_dir):
    models = [m for m in suite.read_models(ROOT / "tests" / "models" / "models.txt")
              if m["name"] == name]
    if not models:
        sys.exit(f"{name}: not in tests/models/models.txt")
    m = models[0]
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths, absent = suite.ensure_models([m], out)
    if name in absent:
        sys.exit(f"{name}: {absent[name]}")
    path = paths.get(name)
    if path is None:
        sys.exit(f"{name}: export failed (logs in {out})")
    import onnx
    from onnx import helper
    model = onnx.load(str(path), load_external_data=False)
    inits = {t.name for t in model.graph.initializer}
    dims = dict(d.split("=", 1) for d in m["dims"])
    rng = np.random.default_rng(zlib.crc32(name.encode()))  # as run.py draws them
    k = 0
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else int(dims[d.dim_param])
                 for d in tt.shape.dim]
        x = suite.draw_input(rng, m["draw"].get(vi.name), tt.elem_type, shape)
        x.tofile(out / f"in_{k}.bin")
        k += 1
    print(path)


def compare(ref_path, got_path, classes):
    ref = np.fromfile(ref_path, np.float32)
    got = np.fromfile(got_path, np.float32)
    if ref.size != got.size or ref.size % classes:
        print(f"sizes differ: {ref.size} and {got.size} floats")
        return 1
    ok = bool(np.all(np.isfinite(got))) and bool(
        np.allclose(got, ref, rtol=suite.RTOL, atol=suite.ATOL))
    diff = float(np.max(np.abs(got.astype(np.float64) - ref)))
    agree = int(np.sum(np.argmax(got.reshape(-1, classes), 1) ==
                       np.argmax(ref.reshape(-1, classes), 1)))
    rows = ref.size // classes
    print(f"max |diff| {diff:.2e}, {'within' if ok else 'NOT within'} rtol {suite.RTOL:g} "
          f"atol {suite.ATOL:g}, top-1 agreement {agree}/{rows}")
    return 0 if ok else 1


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "suite-model":
        suite_model(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 5 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3], int(sys.argv[4])))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
