"""INT8 against float on every CNN and transformer of the model suite (issue 13 item 6).

For each model of tests/models/models.txt exported by the TorchScript exporter or committed
in the repository (one export per network: the dynamo exports are the same networks) whose
graph has a convolution or a matrix product and no recurrent node nor quantized one:
  kiln calibrate (minmax, the default) on CALIB samples drawn as models.txt says,
  kiln compile --int8, the bundle built with the C compiler (-O2),
  the int8 bundle and ONNX Runtime (float) on EVAL other samples;
and, as the peer, ONNX Runtime's own int8: onnxruntime.quantization.quantize_static (QDQ,
per-channel int8 weights, uint8 activations, MinMax) on the same calibration samples, run on
the same EVAL samples. Prints, per model and for both, the cosine of the int8 outputs against
float (mean and worst sample) and the top-1 agreement by the model's task (classify: the
class; segment: per pixel; lm: per position), and the nodes Kiln leaves in float. A model
fails when Kiln's mean cosine is below both --min-cosine and ONNX Runtime int8's mean cosine
less --peer-margin (the random-weight suite models are deep and untrained: their agreement
is a property of the network as much as of the quantizer, so the peer sets the bar where it
is lower). Models whose exporter is absent are skipped. With --docs, the table goes to that
file.
Usage: suite.py --kiln PATH/TO/kiln [--work DIR] [--docs FILE] [--jobs N] [FILTER...]
"""
import argparse
import concurrent.futures
import logging
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tests" / "models"))
import run as suite  # noqa: E402  (the model suite's list, exports and input draws)

RECURRENT = {"LSTM", "GRU", "RNN", "Scan", "Loop"}
QUANTIZED = {"QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul",
             "ConvInteger", "MatMulInteger"}
PRODUCTS = {"Conv", "MatMul", "Gemm", "ConvTranspose"}


def eligible(m, path):
    """A CNN or transformer of one export per network, not already quantized."""
    kind, _ = suite.source_of(m)
    if not (kind == "export" and not m["source"].startswith("quantize:")) and \
            not m["source"].startswith("repo:"):
        return False
    ops = {n.op_type for n in onnx.load(str(path), load_external_data=False).graph.node}
    return bool(ops & PRODUCTS) and not ops & (RECURRENT | QUANTIZED)


def input_specs(path, m):
    """[(name, numpy dtype, shape)] with models.txt's dim:SYMBOL=VALUE (else 1) applied."""
    dims = dict(d.split("=", 1) for d in m["dims"])
    g = onnx.load(str(path), load_external_data=False).graph
    inits = {i.name for i in g.initializer}
    specs = []
    for i in g.input:
        if i.name in inits:
            continue
        t = i.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else int(dims.get(d.dim_param, 1))
                 for d in t.shape.dim]
        specs.append((i.name, t.elem_type, shape))
    return specs


def draw(rng, m, specs, n):
    return [{name: suite.draw_input(rng, m["draw"].get(name), et, shape)
             for name, et, shape in specs} for _ in range(n)]


def cosine(a, b):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    den = np.linalg.norm(a) * np.linalg.norm(b)
    return float(np.dot(a, b) / den) if den else 1.0


def ort_int8(path, calib, evals, out):
    """ONNX Runtime's int8 of the model (quantize_static as above) and its outputs on evals."""
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod,
                                          QuantFormat, QuantType, quantize_static)
    logging.getLogger().setLevel(logging.ERROR)  # (its advice to pre-process the model)
    ort.set_default_logger_severity(3)           # (and its notes on unused initializers)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(calib)

        def get_next(self):
            return next(self.it, None)

    with np.errstate(all="ignore"):  # (a tensor of zero range divides by zero in there)
        quantize_static(str(path), str(out), Reader(), quant_format=QuantFormat.QDQ,
                        per_channel=True, activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8, calibrate_method=CalibrationMethod.MinMax)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(out), so, providers=["CPUExecutionProvider"])
    return [sess.run(None, e) for e in evals]


def agreement(m, gots, refs):
    """(mean cosine, worst cosine, mean top-1) of per-sample outputs against float."""
    cos, agree = [], []
    for got, ref in zip(gots, refs):
        cos.append(cosine(np.concatenate([g.ravel() for g in got]),
                          np.concatenate([x.ravel() for x in ref])))
        t = suite.top1(m["task"], got[0].reshape(ref[0].shape), ref[0])
        if t is not None:
            agree.append(t)
    return float(np.mean(cos)), float(np.min(cos)), float(np.mean(agree)) if agree else None


def run_model(m, path, a, work):
    row = {"name": m["name"], "task": m["task"]}
    w = work / m["name"]
    (w / "calib").mkdir(parents=True, exist_ok=True)
    specs = input_specs(path, m)
    rng = np.random.default_rng(a.seed)
    calib = draw(rng, m, specs, a.calib)
    for k, s in enumerate(calib):
        np.savez(w / "calib" / f"s{k:03d}.npz", **s)
    evals = draw(rng, m, specs, a.eval)
    dim_args = [x for d in m["dims"] for x in ("--dim", d)]
    t0 = time.perf_counter()
    r = subprocess.run([a.kiln, "calibrate", str(path), "--data", str(w / "calib"), "-o",
                        str(w / "model.qparams"), "--quiet", *dim_args],
                       capture_output=True, text=True)
    if r.returncode != 0:
        row["why"] = "kiln calibrate: " + suite.first_error(r.stderr)
        return row
    r = subprocess.run([a.kiln, "compile", str(path), "--int8", str(w / "model.qparams"),
                        "-o", str(w / "bundle"), "--name", "q", "--test-main", *dim_args],
                       capture_output=True, text=True)
    if r.returncode != 0:
        row["why"] = "kiln compile --int8: " + suite.first_error(r.stderr)
        return row
    nodes = re.search(r": (\d+) nodes \(", r.stdout + r.stderr)
    kept = re.search(r"int8: (\d+) nodes? stays? float[^:]*: (.*)", r.stdout + r.stderr)
    row["nodes"] = int(nodes.group(1)) if nodes else None
    row["float_nodes"] = int(kept.group(1)) if kept else 0
    row["float_ops"] = kept.group(2).strip() if kept else ""
    b = w / "bundle"
    exe = b / "q_test"
    r = subprocess.run([a.cc, "-O2", "-std=c99", "-I", str(b), str(b / "q.c"),
                        str(b / "q_test_main.c"), "-o", str(exe), "-lm"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        row["why"] = f"{a.cc}: " + suite.first_error(r.stderr)
        return row
    args = [str(exe), str(b / "q_weights.bin")]
    for i, (name, _, _) in enumerate(specs):   # the samples back to back: one run does them all
        f = w / f"in_{i}.bin"
        np.concatenate([e[name].ravel() for e in evals]).tofile(f)
        args.append(str(f))
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    refs = [sess.run(None, e) for e in evals]
    outs = [w / f"out_{i}.bin" for i in range(len(refs[0]))]
    r = subprocess.run(args + [str(o) for o in outs], capture_output=True, text=True)
    if r.returncode != 0:
        row["why"] = f"int8 bundle exit {r.returncode}: {r.stderr.strip()[:200]}"
        return row
    gots = [np.fromfile(o, dtype=refs[0][i].dtype).reshape(len(evals), *refs[0][i].shape)
            for i, o in enumerate(outs)]
    row["cos_mean"], row["cos_min"], row["top1"] = agreement(
        m, [[g[k] for g in gots] for k in range(len(evals))], refs)
    try:
        peer = ort_int8(path, calib, evals, w / "ort_int8.onnx")
        row["ort_cos_mean"], row["ort_cos_min"], row["ort_top1"] = agreement(m, peer, refs)
    except Exception as e:  # noqa: BLE001 (the peer's failure is reported, not fatal)
        row["ort_why"] = f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"
    row["seconds"] = time.perf_counter() - t0
    bar = a.min_cosine
    if "ort_cos_mean" in row:
        bar = min(bar, row["ort_cos_mean"] - a.peer_margin)
    row["ok"] = bool(np.isfinite(row["cos_mean"]) and row["cos_mean"] >= bar)
    if not row["ok"]:
        row["why"] = f"cosine {row['cos_mean']:.4f}, want >= {bar:.4f}"
    return row


def table(rows):
    head = ("| model | exporter | task | Kiln cosine mean (worst) | Kiln top-1 | ORT int8 cosine "
            "mean (worst) | ORT int8 top-1 | nodes | Kiln leaves in float | result |")
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|"]

    def pct(x):
        return f"{100 * x:.1f}%" if x is not None else "-"
    for r in rows:
        if "cos_mean" not in r:
            lines.append(f"| {r['name']} | {r['exporter']} | {r['task']} | - | - | - | - | - | - | "
                         f"FAIL: {r.get('why', '')} |")
            continue
        kept = f"{r['float_nodes']}" + (f" ({r['float_ops']})" if r["float_ops"] else "")
        peer = (f"{r['ort_cos_mean']:.5f} ({r['ort_cos_min']:.5f}) | {pct(r['ort_top1'])}"
                if "ort_cos_mean" in r else f"failed: {r.get('ort_why', '')} | -")
        lines.append(f"| {r['name']} | {r['exporter']} | {r['task']} | {r['cos_mean']:.5f} "
                     f"({r['cos_min']:.5f}) | {pct(r['top1'])} | {peer} | {r['nodes']} | {kept} | "
                     f"{'pass' if r['ok'] else 'FAIL'} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--work", help="bundles and samples (default: a temporary folder)")
    ap.add_argument("--docs", help="write the table into this Markdown file")
    ap.add_argument("--calib", type=int, default=16, help="calibration samples (default 16)")
    ap.add_argument("--eval", type=int, default=32, help="evaluation samples (default 32)")
    ap.add_argument("--seed", type=int, default=8)
    ap.add_argument("--min-cosine", type=float, default=0.99,
                    help="a model passes at this mean cosine (default 0.99) ...")
    ap.add_argument("--peer-margin", type=float, default=0.01,
                    help="... or within this of ONNX Runtime int8's (default 0.01)")
    ap.add_argument("--jobs", type=int,
                    default=int(os.environ.get("KILN_JOBS", 0)) or os.cpu_count(),
                    help="models side by side (default: KILN_JOBS, else the CPU count)")
    ap.add_argument("filters", nargs="*", help="run only models whose name contains one")
    a = ap.parse_args()
    a.kiln = str(pathlib.Path(a.kiln).resolve())
    models = suite.read_models(ROOT / "tests" / "models" / "models.txt")
    if a.filters:
        models = [m for m in models if any(f in m["name"] for f in a.filters)]
    tmp = None
    if a.work:
        work = pathlib.Path(a.work)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="kiln-int8-suite-")
        work = pathlib.Path(tmp.name)
    work.mkdir(parents=True, exist_ok=True)
    log = work / "logs"
    log.mkdir(exist_ok=True)
    paths, absent = suite.ensure_models(models, log)
    rows, n_pass, n_fail, n_skip = [], 0, 0, 0
    todo = []  # (model, its file): run side by side, reported in the list's order
    for m in models:
        p = paths.get(m["name"])
        if m["name"] in absent or p is None:
            kind, _ = suite.source_of(m)
            if (kind == "export" and not m["source"].startswith("quantize:")) or \
                    m["source"].startswith("repo:"):
                print(f"skip {m['name']}: not exported ({absent.get(m['name'], 'no file')})")
                n_skip += 1
            continue
        if eligible(m, p):
            todo.append((m, p))
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        futures = [pool.submit(run_model, m, p, a, work) for m, p in todo]
        for (m, _), fut in zip(todo, futures):  # in the list's order
            row = fut.result()
            row["exporter"] = suite.exporter_of(m)
            rows.append(row)
            if row.get("ok"):
                n_pass += 1
                print(f"ok   {m['name']}: cosine {row['cos_mean']:.5f} "
                      f"(worst {row['cos_min']:.5f}), top-1 {row['top1']}, "
                      f"ORT int8 cosine {row.get('ort_cos_mean')}, "
                      f"{row['float_nodes']} of {row['nodes']} nodes float, {row['seconds']:.1f} s",
                      flush=True)
            else:
                n_fail += 1
                print(f"FAIL {m['name']}: {row.get('why')}", flush=True)
    text = table(rows)
    print()
    print(text)
    if a.docs:
        doc = pathlib.Path(a.docs)
        doc.write_text(
            "# INT8 against float on the model suite\n\n"
            "Generated by `tests/int8/suite.py` (do not edit by hand: `bash tests/int8/suite.sh "
            "build/kiln --docs docs/int8-suite.md`).\n\n"
            f"Every CNN and transformer of the model suite (`tests/models/models.txt`, one export "
            f"per network: TorchScript exports and the repository's models; seeded random weights, "
            f"so these are agreement figures, not accuracies: docs/int8.md has the accuracies of "
            f"trained models on real labels): `kiln calibrate` (minmax) on {a.calib} samples drawn "
            f"as models.txt says, `kiln compile --int8`, the bundle built with `{a.cc} -O2`, run "
            f"on {a.eval} other samples against ONNX Runtime's float outputs; the peer: ONNX "
            f"Runtime's own int8 (`quantize_static`, QDQ, per-channel int8 weights, uint8 "
            f"activations, MinMax, the same calibration samples) on the same samples. Cosine: "
            f"of all the outputs of one sample, the mean and the worst over the samples; top-1 "
            f"agreement by the model's task (the class; per pixel for segmentation; per position "
            f"for the language model); left in float: the nodes `kiln compile --int8` names as "
            f"having no int8 kernel (or a neighbour without parameters). A model passes with a "
            f"mean cosine >= {a.min_cosine}, or within {a.peer_margin} of ONNX Runtime int8's "
            f"(random deep networks lose agreement layer by layer whoever quantizes them).\n\n"
            + text + "\n")
    print(f"{n_pass} passed, {n_fail} failed, {n_skip} skipped")
    if tmp:
        tmp.cleanup()
    sys.exit(1 if n_fail else 0)


if __name__ == "__main__":
    main()
