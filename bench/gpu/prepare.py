"""Prepares the GPU benchmark here (no GPU needed): exports each model of models.py with torch
at batch 1, 32 and 256 (opset 17), compiles each with `kiln compile --target cuda` in fp32 and
fp16 into OUT/NAME_bB_PREC/ (and the models of CONV_VARIANTS once more with each forced
`--conv` lowering, OUT/NAME_bB_fp16_LOWERING/), and stores each distinct weights file once, xz-compressed, as
OUT/weights/SHA.bin.xz (bundles name theirs in OUT/index.json). The periodic weights of
models.py make ResNet-50 and BERT-base small enough to carry; run.py rebuilds the PyTorch
models from the same formula on the GPU machine. BatchNorm statistics are measured here
(models.calibrate) before the export, which folds them into the convolutions, and stored in
OUT/bn_stats.npz (a few hundred KB), which run.py loads into its PyTorch models.
usage: python3 bench/gpu/prepare.py KILN OUT [MODEL...]
Environment (to prepare a part, e.g. bench/gpu/conv_prepare.sh): BENCH_BATCHES="256",
BENCH_PRECISIONS="fp16", BENCH_CONV="im2col,implicit" (the forced lowerings, for every model
named), BENCH_ONNX=DIR (reuse DIR's NAME.onnx and bn_stats.npz instead of exporting again).
"""
import concurrent.futures as cf
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import models  # noqa: E402

BATCHES = [int(b) for b in os.environ.get("BENCH_BATCHES", "1,32,256").split(",")]
PRECISIONS = os.environ.get("BENCH_PRECISIONS", "fp32,fp16").split(",")
OPSET = 17
# fp16 bundles compiled again with each convolution lowering forced (kiln compile --conv),
# timed and profiled beside the default (auto) ones: the im2col vs implicit GEMM comparison
CONV_VARIANTS = {"resnet50": ["im2col", "implicit"]}
if "BENCH_CONV" in os.environ:
    CONV_VARIANTS = {m: [v for v in os.environ["BENCH_CONV"].split(",") if v]
                     for m in models.MODELS}
XZ_DICT = "512MiB"   # > the largest weights file (BERT-base, 437 MB): gzip's 32 KiB window
                     # compresses it only 7x, xz with this window ~2000x


def export(name, model, path):
    """One export per model, traced at batch 2 with a symbolic batch dimension (kiln fixes it
    with --dim batch=N): tracing BERT-base at batch 256 on a small CPU takes minutes."""
    args = models.inputs(name, 2, 0)
    names = models.input_names(name)
    dyn = {n: {0: "batch"} for n in names + ["output"]}
    torch.onnx.export(model, args, str(path), opset_version=OPSET, input_names=names,
                      output_names=["output"], do_constant_folding=True, dynamic_axes=dyn)


def compile_one(kiln, onnx_path, out, stem, prec, conv):
    key = f"{stem}_{prec}" + (f"_{conv}" if conv != "auto" else "")
    d = out / key
    shutil.rmtree(d, ignore_errors=True)
    batch = stem.rsplit("_b", 1)[1]
    r = subprocess.run([kiln, "compile", str(onnx_path), "-o", str(d), "--name", stem,
                        "--target", "cuda", "--precision", prec, "--conv", conv,
                        "--dim", f"batch={batch}"], capture_output=True, text=True)
    if r.returncode != 0:
        return key, stem, prec, conv, None, r.stderr.strip()[-400:]
    w = d / f"{stem}_weights.bin"
    digest = hashlib.sha256(w.read_bytes()).hexdigest()[:16]
    return key, stem, prec, conv, (d, w, digest), ""


def main():
    kiln, out = sys.argv[1], pathlib.Path(sys.argv[2])
    names = sys.argv[3:] or models.MODELS
    onnx_dir = out.parent / (out.name + ".onnx")
    onnx_dir.mkdir(parents=True, exist_ok=True)
    (out / "weights").mkdir(parents=True, exist_ok=True)
    index_path = out / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    jobs = []
    torch.set_num_threads(2)
    reuse = os.environ.get("BENCH_ONNX")
    if reuse:
        shutil.copy(pathlib.Path(reuse) / "bn_stats.npz", out / "bn_stats.npz")
    for name in names:
        if reuse:
            p = pathlib.Path(reuse) / f"{name}.onnx"
        else:
            model = models.build(name)
            models.save_stats(out / "bn_stats.npz", models.calibrate(model, name))
            p = onnx_dir / f"{name}.onnx"
            export(name, model, p)
            print(f"exported {p}", flush=True)
            del model
        jobs += [(p, f"{name}_b{b}", prec, "auto") for b in BATCHES for prec in PRECISIONS]
        jobs += [(p, f"{name}_b{b}", "fp16", conv) for b in BATCHES
                 for conv in CONV_VARIANTS.get(name, [])]
    with cf.ThreadPoolExecutor(2) as ex:
        res = list(ex.map(lambda j: compile_one(kiln, j[0], out, *j[1:]), jobs))
    for key, stem, prec, conv, got, err in res:
        if got is None:
            print(f"kiln refused {key}: {err}")
            index[key] = {"error": err}
            continue
        d, w, digest = got
        gz = out / "weights" / f"{digest}.bin.xz"
        if not gz.exists():   # a large window finds the repeats of models.py's weight table
            subprocess.run(f"xz -1 -T1 --lzma2=preset=1,dict={XZ_DICT} -c {w} > {gz}",
                           shell=True, check=True)
        w.unlink()
        for f in d.glob("*.o"):
            f.unlink()
        index[key] = {"dir": d.name, "name": stem, "weights": gz.name,
                      "model": stem.rsplit("_b", 1)[0], "batch": int(stem.rsplit("_b", 1)[1]),
                      "precision": prec, "conv": conv}
        print(f"compiled {key} (weights {gz.name})", flush=True)
    index_path.write_text(json.dumps(index, indent=1, sort_keys=True))
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"{out}: {size / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
