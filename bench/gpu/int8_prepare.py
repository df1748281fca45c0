"""Prepares the GPU INT8 benchmark here (no GPU needed; issue 13 item 7, GPU row): ResNet-50
of models.py (periodic weights, calibrated BatchNorm statistics, exported at a symbolic batch
as prepare.py does) compiled with `kiln compile --target cuda` at batch 1 and 256 twice:
INT8 (`--int8` with a .qparams from `kiln calibrate` on 8 seeded synthetic inputs, minmax;
float32 storage for the float ends) and fp16 (`--precision fp16`, the peer). Weights files
are stored once each, xz-compressed, under OUT/weights (ResNet-50 int8 26 MB and fp16 51 MB
raw; the periodic table compresses them to a few MB). The synthetic calibration makes the
scales plausible, not accurate: a speed benchmark needs no trained accuracy.
Also writes OUT/cases/r50_b1_int8/ for scripts/gpu-check-int8 (the batch-1 INT8 bundle, one
seeded input, the C INT8 bundle's output on it as ref.bin).
usage: python3 bench/gpu/int8_prepare.py KILN OUT   (Debian's python3: torch 1.13)"""
import hashlib
import json
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import models  # noqa: E402
import prepare  # noqa: E402

NAME = "resnet50"
BATCHES = [1, 256]
CALIB = 8


def run(cmd):
    print("+", " ".join(map(str, cmd)), flush=True)
    subprocess.run([str(c) for c in cmd], check=True)


def main():
    kiln, out = sys.argv[1], pathlib.Path(sys.argv[2]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    (out / "weights").mkdir(exist_ok=True)
    work = out.parent / (out.name + ".work")
    work.mkdir(exist_ok=True)
    onnx_path = work / f"{NAME}.onnx"
    if not onnx_path.exists():
        torch.set_num_threads(2)
        model = models.build(NAME)
        models.calibrate(model, NAME)
        prepare.export(NAME, model, onnx_path)
    calib = work / "calib"
    calib.mkdir(exist_ok=True)
    for i in range(CALIB):
        x = models.inputs(NAME, 1, 1000 + i)[0].numpy()
        np.save(calib / f"s{i}.npy", x.astype(np.float32))
    qp = work / f"{NAME}.qparams"
    if not qp.exists():
        run([kiln, "calibrate", onnx_path, "--data", calib, "--dim", "batch=1", "-o", qp])
    index = {}
    for b in BATCHES:
        for prec in ["int8", "fp16"]:
            key = f"r50_b{b}_{prec}"
            d = out / key
            shutil.rmtree(d, ignore_errors=True)
            args = ["--int8", qp] if prec == "int8" else ["--precision", "fp16"]
            run([kiln, "compile", onnx_path, "-o", d, "--name", key, "--target", "cuda",
                 "--dim", f"batch={b}", "--test-main"] + args)
            w = d / f"{key}_weights.bin"
            digest = hashlib.sha256(w.read_bytes()).hexdigest()[:16]
            xz = out / "weights" / f"{digest}.bin.xz"
            if not xz.exists():
                subprocess.run(f"xz -1 -T1 --lzma2=preset=1,dict=256MiB -c {w} > {xz}",
                               shell=True, check=True)
            w.unlink()
            index[key] = {"batch": b, "precision": prec, "weights": xz.name,
                          "input_floats": b * 3 * 224 * 224}
    (out / "index.json").write_text(json.dumps(index, indent=1, sort_keys=True))
    # the exactness case: the batch-1 INT8 bundle against the C INT8 bundle on one input
    case = out / "cases" / "r50_b1_int8"
    shutil.rmtree(case, ignore_errors=True)
    c = work / "r50_b1_int8_c"
    shutil.rmtree(c, ignore_errors=True)
    run([kiln, "compile", onnx_path, "-o", c, "--name", "r50_b1_int8", "--dim", "batch=1",
         "--test-main", "--int8", qp])
    run(["cc", "-O2", "-march=native", "-std=c99", "-o", c / "t", c / "r50_b1_int8.c",
         c / "r50_b1_int8_test_main.c", "-lm"])
    shutil.copytree(out / "r50_b1_int8", case)
    x = models.inputs(NAME, 1, 4242)[0].numpy().astype(np.float32)
    x.tofile(case / "in.bin")
    run([c / "t", c / "r50_b1_int8_weights.bin", case / "in.bin", case / "ref.bin"])
    (case / "weights.from").write_text(index["r50_b1_int8"]["weights"] + "\n")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"{out}: {size / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
