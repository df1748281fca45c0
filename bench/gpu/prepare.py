"""Prepares the GPU benchmark here (no GPU needed): exports each model of models.py with torch
at batch 1, 32 and 256 (opset 17), compiles each with `kiln compile --target cuda` in fp32 and
fp16 into OUT/NAME_bB_PREC/, and stores each distinct weights file once, gzip-compressed, as
OUT/weights/SHA.bin.gz (bundles name theirs in OUT/index.json). The periodic weights of
models.py make ResNet-50 and BERT-base small enough to carry; run.py rebuilds the PyTorch
models from the same formula on the GPU machine.
usage: python3 bench/gpu/prepare.py KILN OUT [MODEL...]"""
import concurrent.futures as cf
import gzip
import hashlib
import json
import pathlib
import shutil
import subprocess
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import models  # noqa: E402

BATCHES = [1, 32, 256]
PRECISIONS = ["fp32", "fp16"]
OPSET = 17


def export(name, model, batch, path):
    args = models.inputs(name, batch, 0)
    torch.onnx.export(model, args, str(path), opset_version=OPSET,
                      input_names=models.input_names(name), output_names=["output"],
                      do_constant_folding=True)


def compile_one(kiln, onnx_path, out, stem, prec):
    d = out / f"{stem}_{prec}"
    shutil.rmtree(d, ignore_errors=True)
    r = subprocess.run([kiln, "compile", str(onnx_path), "-o", str(d), "--name", stem,
                        "--target", "cuda", "--precision", prec], capture_output=True, text=True)
    if r.returncode != 0:
        return stem, prec, None, r.stderr.strip()[-400:]
    w = d / f"{stem}_weights.bin"
    digest = hashlib.sha256(w.read_bytes()).hexdigest()[:16]
    return stem, prec, (d, w, digest), ""


def main():
    kiln, out = sys.argv[1], pathlib.Path(sys.argv[2])
    names = sys.argv[3:] or models.MODELS
    onnx_dir = out.parent / (out.name + ".onnx")
    onnx_dir.mkdir(parents=True, exist_ok=True)
    (out / "weights").mkdir(parents=True, exist_ok=True)
    index_path = out / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    jobs = []
    torch.set_num_threads(8)
    for name in names:
        model = models.build(name)
        for b in BATCHES:
            stem = f"{name}_b{b}"
            p = onnx_dir / f"{stem}.onnx"
            export(name, model, b, p)
            print(f"exported {p}", flush=True)
            jobs += [(p, stem, prec) for prec in PRECISIONS]
        del model
    with cf.ThreadPoolExecutor(8) as ex:
        res = list(ex.map(lambda j: compile_one(kiln, j[0], out, j[1], j[2]), jobs))
    for stem, prec, got, err in res:
        key = f"{stem}_{prec}"
        if got is None:
            print(f"kiln refused {key}: {err}")
            index[key] = {"error": err}
            continue
        d, w, digest = got
        gz = out / "weights" / f"{digest}.bin.gz"
        if not gz.exists():
            subprocess.run(f"gzip -1 -c {w} > {gz}", shell=True, check=True)
        w.unlink()
        for f in d.glob("*.o"):
            f.unlink()
        index[key] = {"dir": d.name, "name": stem, "weights": gz.name,
                      "model": stem.rsplit("_b", 1)[0], "batch": int(stem.rsplit("_b", 1)[1]),
                      "precision": prec}
        print(f"compiled {key} (weights {gz.name})", flush=True)
    index_path.write_text(json.dumps(index, indent=1, sort_keys=True))
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"{out}: {size / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
