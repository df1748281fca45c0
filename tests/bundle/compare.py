#!/usr/bin/env python3
"""Runs a compiled bundle's program on random inputs and compares its outputs with ONNX Runtime.

The program takes, for each model in order: the weights file (left out for embedded weights),
one raw little-endian file per input, one file per output to write (the argument order of
kiln's NAME_test_main.c; the tests' own mains for several bundles chain the lists). Inputs are
drawn fresh (seed printed) unless --seed is given. Floats must match within RTOL/ATOL, other
types exactly, with ONNX Runtime's dtype and element count.

usage: compare.py --work DIR --exe PROG --model M.onnx [--weights W|none] [--model ...]
                  [--seed N] [--int-range LO HI] [--expect-status CODE] [--keep DIR]
With --expect-status the program must fail with that NAME_run status (exit 1 and
"status CODE" on stderr) and outputs are not compared.
"""
import argparse
import os
import pathlib
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import kiln_venv  # noqa: E402 (scripts/kiln_venv.py: a plain python3 restarts under the venv)
kiln_venv.use_venv(('numpy', 'onnx', 'onnxruntime'))
import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

RTOL = 1e-4   # float32 kernels vs ONNX Runtime's, a few ulps apart after a handful of ops
ATOL = 1e-5


def draw(rng, elem_type, shape, int_range):
    dtype = helper.tensor_dtype_to_np_dtype(elem_type)
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(shape).astype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    return rng.integers(int_range[0], int_range[1], shape).astype(dtype)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--exe", required=True)
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--weights", action="append", default=[])
    ap.add_argument("--seed", type=int)
    ap.add_argument("--int-range", nargs=2, type=int, default=[0, 4])
    ap.add_argument("--expect-status", type=int)
    ap.add_argument("--keep")
    ap.add_argument("--rtol", type=float, default=RTOL,
                    help="float tolerance (default %(default)s); Winograd bundles take the model "
                         "suite's 1e-3 / 1e-4: F(4x4,3x3)'s rounding follows its terms' size")
    ap.add_argument("--atol", type=float, default=ATOL)
    a = ap.parse_args()
    if len(a.weights) != len(a.model):
        sys.exit("give one --weights (a path or 'none') per --model")
    seed = a.seed if a.seed is not None else int.from_bytes(os.urandom(4), "little")
    rng = np.random.default_rng(seed)
    work = pathlib.Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    args, expected = [a.exe], []
    for mi, (path, weights) in enumerate(zip(a.model, a.weights)):
        m = onnx.load(path)
        inits = {t.name for t in m.graph.initializer}
        feeds = {}
        if weights != "none":
            args.append(weights)
        for vi in m.graph.input:
            if vi.name in inits:
                continue
            tt = vi.type.tensor_type
            shape = [d.dim_value for d in tt.shape.dim]
            x = draw(rng, tt.elem_type, shape, a.int_range)
            feeds[vi.name] = x
            f = work / f"m{mi}_in_{vi.name}.bin"
            f.write_bytes(x.tobytes())
            args.append(str(f))
        if a.expect_status is None:
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            refs = sess.run(None, feeds)
        else:
            refs = [None] * len(m.graph.output)
        for oi, vo in enumerate(m.graph.output):
            f = work / f"m{mi}_out_{oi}.bin"
            args.append(str(f))
            expected.append((pathlib.Path(path).name, vo.name, f, refs[oi]))
    r = subprocess.run(args, capture_output=True, text=True)
    if a.expect_status is not None:
        want = f"status {a.expect_status}"
        if r.returncode == 1 and want in r.stderr:
            print(f"seed {seed}: program failed with {want} as expected")
            return 0
        print(f"seed {seed}: expected exit 1 with '{want}', got exit {r.returncode}: "
              f"{r.stderr.strip()}")
        return 1
    if r.returncode != 0:
        print(f"seed {seed}: {' '.join(args)}\nexit {r.returncode}: {r.stderr.strip()}")
        return 1
    bad = 0
    for model, name, f, ref in expected:
        got = np.frombuffer(f.read_bytes(), dtype=ref.dtype)
        if got.size != ref.size:
            print(f"seed {seed}: {model} output {name}: {got.size} elements, want {ref.size}")
            bad += 1
            continue
        got = got.reshape(ref.shape)
        if np.issubdtype(ref.dtype, np.floating):
            ok = np.allclose(got, ref, rtol=a.rtol, atol=a.atol)
            err = float(np.max(np.abs(got.astype(np.float64) - ref))) if ref.size else 0.0
        else:
            ok = np.array_equal(got, ref)
            err = int(np.count_nonzero(got != ref))
        print(f"seed {seed}: {model} output {name} {ref.dtype}{list(ref.shape)}: "
              f"{'ok' if ok else 'MISMATCH'} (max err {err})")
        bad += not ok
    if a.keep:
        keep = pathlib.Path(a.keep)
        keep.mkdir(parents=True, exist_ok=True)
        for _, _, f, _ in expected:
            shutil.copy(f, keep / f.name)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
