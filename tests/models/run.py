#!/usr/bin/env python3
"""The real-model suite: every model of tests/models/models.txt through kiln and ONNX Runtime.

For each model: `kiln compile` (must succeed), the bundle and its test main built with the
C compiler at -O2, one seeded random input run through the bundle and through ONNX Runtime,
and the outputs compared at float32 tolerance (rtol 1e-3, atol 1e-4). Prints a table (max
abs error, cosine similarity, top-1 agreement, arena against its lower bound, times) and
ends with "N passed, N failed, N skipped"; models of known_failures.txt count as skipped.
Without a FILTER it also writes docs/models.md, the same table.

Exports are cached outside the repository, in $KILN_MODEL_CACHE (default
~/.cache/kiln/models), one folder per exporter named by a hash of its scripts (TorchScript:
export.py and quantize.py; the others: their export script and their pinned requirements):
the models are exported again only when those change. The exporters other than Debian's
PyTorch 1.13 live in venvs of scripts/exporters; a model whose exporter is absent is skipped
with the command that installs it, or installed on demand with --install-exporters (or
KILN_INSTALL_EXPORTERS=1).

The comparison is `kiln validate --inputs` on the suite's own seeded inputs (figures from its
JSON report; top-1 per task from the outputs it keeps), or, with --own-compare, for kilns
without validate, and for models marked ort=none, this script's own: the bundle's test main
built with CC at -O2 and ONNX Runtime run here.

usage: run.py --kiln PATH [--work DIR] [--cc CC] [--docs PATH|--no-docs] [--own-compare]
              [--install-exporters] [FILTER...]
Run it with the pinned venv python (onnxruntime); export.py runs under /usr/bin/python3.
"""
import argparse
import hashlib
import json
import os
import pathlib
import platform
import re
import shutil
import subprocess
import sys
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import kiln_venv  # noqa: E402 (scripts/kiln_venv.py: a plain python3 restarts under the venv)
kiln_venv.use_venv(('numpy', 'onnx', 'onnxruntime'))
import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RTOL, ATOL = 1e-3, 1e-4          # float32 tolerance of the suite (the brief's, and ORT's own)
SYSTEM_PY = "/usr/bin/python3"   # Debian's python with PyTorch for export.py
CFLAGS = ["-O2", "-std=c99"]     # -O2: ResNet-50 through the naive kernels stays in seconds
HASH_CHARS = 16                  # of the cache key; collisions between script versions are moot
ARENA_RE = re.compile(r"^arena: (\d+) bytes \(lower bound (\d+), naive sum (\d+)\)$", re.M)


def parse_list(path):
    """Lines of NAME FIELDS..., without comments and blank lines."""
    rows = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            rows.append(line.split())
    return rows


def read_models(path):
    models = []
    for f in parse_list(path):
        m = {"name": f[0], "source": f[1], "task": f[2], "draw": {}, "dims": [], "ort": "all",
             "min_cosine": None}
        for opt in f[3:]:
            if opt.startswith("dim:"):
                m["dims"].append(opt[4:])
            elif opt.startswith("ort="):
                m["ort"] = opt[4:]
            elif opt.startswith("pass=cosine:"):
                m["min_cosine"] = float(opt.split(":", 1)[1])
            else:
                k, v = opt.split("=", 1)
                m["draw"][k] = v
        models.append(m)
    return models


def read_known(path):
    known = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, reason = line.strip().partition(" ")
            known[name] = reason.strip()
    return known


# The exporters: a models.txt SOURCE is KIND or KIND:BASE (BASE, the exporter's name for the
# network, defaults to the model's name). venv: the exporter venv of scripts/exporters (None:
# Debian's python with PyTorch 1.13); hashed: the files whose hash names the cache folder.
EXPORTERS = {
    "export": {"venv": None, "script": "export.py", "args": [], "tag": "torchscript",
               "hashed": ["export.py", "quantize.py"]},
    "dynamo": {"venv": "torch", "script": "export.py", "args": ["--exporter", "dynamo"],
               "tag": "dynamo", "hashed": ["export.py", "requirements-exporters-torch.txt"]},
    "tf2onnx": {"venv": "tf", "script": "export_tf.py", "args": [], "tag": "tf2onnx",
                "hashed": ["export_tf.py", "requirements-exporters-tf.txt"]},
    "paddle2onnx": {"venv": "paddle", "script": "export_paddle.py", "args": [],
                    "tag": "paddle2onnx",
                    "hashed": ["export_paddle.py", "requirements-exporters-paddle.txt"]},
}
EXPORTERS_SCRIPT = ROOT / "scripts" / "exporters"


def source_of(m):
    """(exporter kind, the exporter's name of the network) of a model, or (None, None)."""
    kind, _, base = m["source"].partition(":")
    if kind in EXPORTERS:
        return kind, base or m["name"]
    if kind == "quantize":
        return "export", base
    return None, None


def exporter_of(m):
    """The tag of the exporter that wrote the model (torchscript, dynamo, ...), or "-"."""
    kind, _ = source_of(m)
    return EXPORTERS[kind]["tag"] if kind else "-"


def cache_dir(kind="export"):
    """The cache folder of one exporter: named by a hash of its scripts (and pins)."""
    h = hashlib.sha256()
    for f in EXPORTERS[kind]["hashed"]:
        h.update(((ROOT / "scripts" / f) if f.startswith("requirements") else (HERE / f))
                 .read_bytes())
    base = pathlib.Path(os.environ.get("KILN_MODEL_CACHE",
                                       pathlib.Path.home() / ".cache" / "kiln" / "models"))
    folder = h.hexdigest()[:HASH_CHARS]
    return base / (folder if kind == "export" else f"{EXPORTERS[kind]['tag']}-{folder}")


def exporter_python(kind, install, log):
    """The python that runs exporter kind, or None (with the reason) when its venv is absent
    and install is off."""
    venv = EXPORTERS[kind]["venv"]
    if venv is None:
        return SYSTEM_PY, ""
    r = subprocess.run(["bash", str(EXPORTERS_SCRIPT), "python", venv], capture_output=True,
                       text=True)
    if r.returncode != 0 and install:
        print(f"installing exporter '{venv}' (scripts/exporters install {venv}) ...",
              flush=True)
        i = subprocess.run(["bash", str(EXPORTERS_SCRIPT), "install", venv],
                           capture_output=True, text=True)
        (log / f"install_{venv}.log").write_text(i.stdout + i.stderr)
        r = subprocess.run(["bash", str(EXPORTERS_SCRIPT), "python", venv],
                           capture_output=True, text=True)
    if r.returncode != 0:
        return None, (f"exporter '{venv}' not installed: run `scripts/exporters install "
                      f"{venv}` (or the suite with --install-exporters)")
    return r.stdout.strip(), ""


def ensure_models(models, log, install=False):
    """Exports (and quantizes) what the caches lack; returns {name: path or None} and
    {name: why} for the models whose exporter is not installed."""
    paths, absent = {}, {}
    want = {}   # kind -> set of the exporter's names of networks
    for m in models:
        kind, base = source_of(m)
        if kind:
            want.setdefault(kind, set()).add(base)
    for kind, bases in sorted(want.items()):
        cache = cache_dir(kind)
        cache.mkdir(parents=True, exist_ok=True)
        missing = sorted(b for b in bases if not (cache / f"{b}.onnx").exists())
        if not missing:
            continue
        py, why = exporter_python(kind, install, log)
        if py is None:
            for m in models:
                if source_of(m)[0] == kind and source_of(m)[1] in missing:
                    absent[m["name"]] = why
            continue
        ex = EXPORTERS[kind]
        print(f"exporting ({ex['tag']}) {' '.join(missing)} into {cache} ...", flush=True)
        for base in missing:   # one process per model: one failed export spoils no other
            r = subprocess.run([py, str(HERE / ex["script"]), *ex["args"], str(cache), base],
                               capture_output=True, text=True)
            (log / f"export_{ex['tag']}_{base}.log").write_text(r.stdout + r.stderr)
            if r.returncode != 0:
                print(f"  export of {base} failed (see {log}/export_{ex['tag']}_{base}.log)")
    for m in models:
        src, name = m["source"], m["name"]
        kind, base = source_of(m)
        if src.startswith("quantize:"):
            cache = cache_dir("export")
            p = cache / f"{name}.onnx"
            if (cache / f"{base}.onnx").exists() and not p.exists():
                part = p.with_suffix(".part")   # renamed when complete
                r = subprocess.run([sys.executable, str(HERE / "quantize.py"),
                                    str(cache / f"{base}.onnx"), str(part)],
                                   capture_output=True, text=True)
                (log / f"quantize_{name}.log").write_text(r.stdout + r.stderr)
                if r.returncode == 0:
                    part.replace(p)
        elif kind:
            p = cache_dir(kind) / f"{base}.onnx"
        elif src.startswith("repo:"):
            p = ROOT / src.split(":", 1)[1]
        else:
            sys.exit(f"models.txt: {name}: unknown source '{src}'")
        paths[name] = p if p.exists() else None
    return paths, absent


def draw_input(rng, spec, elem_type, shape):
    dtype = helper.tensor_dtype_to_np_dtype(elem_type)
    kind, *args = (spec or "normal").split(":")
    if kind == "normal":
        return rng.standard_normal(shape).astype(dtype)
    if kind == "uniform":
        return rng.uniform(float(args[0]), float(args[1]), shape).astype(dtype)
    if kind == "int":
        return rng.integers(int(args[0]), int(args[1]), shape).astype(dtype)
    if kind == "mask":
        x = np.zeros(shape, dtype)
        x[..., :int(args[0])] = 1
        return x
    raise ValueError(f"unknown input draw '{spec}'")


def top1(task, got, ref):
    """Top-1 agreement; a tie counts as agreement when the other side's top class is among
    the tied (a quantized output ties classes one quantization step apart)."""
    axis = 1 if task == "segment" else -1
    if task not in ("segment", "classify", "lm"):
        return None
    ga, ra = np.argmax(got, axis), np.argmax(ref, axis)
    g_at_r = np.take_along_axis(got, np.expand_dims(ra, axis), axis).squeeze(axis)
    r_at_g = np.take_along_axis(ref, np.expand_dims(ga, axis), axis).squeeze(axis)
    agree = (ga == ra) | (g_at_r == np.max(got, axis)) | (r_at_g == np.max(ref, axis))
    return float(np.mean(agree))


def timed(args, **kw):
    t0 = time.perf_counter()
    r = subprocess.run(args, capture_output=True, text=True, **kw)
    return r, time.perf_counter() - t0


def first_error(text):
    """The first line that says error (else the last line), without folder names."""
    lines = text.strip().splitlines()
    pick = next((ln for ln in lines if "error" in ln), lines[-1] if lines else "?")
    return re.sub(r"(?<![\w.])/[^\s:']*/", "", pick.strip())


def has_validate(kiln):
    """Whether this kiln has `kiln validate` (cli/validate.c)."""
    r = subprocess.run([kiln, "help", "validate"], capture_output=True, text=True)
    return r.returncode == 0


def ort_reference(path, feeds, m):
    """ONNX Runtime's outputs and the time of one run (one thread, after a warm-up)."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1   # one thread, like the bundle: the times are comparable
    if m["ort"] == "none":
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    sess.run(None, feeds)
    t0 = time.perf_counter()
    refs = sess.run(None, feeds)
    return refs, time.perf_counter() - t0


def compare(row, task, gots, refs):
    """Fills the row's figures from the bundle's outputs against ONNX Runtime's."""
    ok, err, cos, scale, agree = True, 0.0, 1.0, 0.0, []
    for i, (got, ref) in enumerate(zip(gots, refs)):
        if got.size != ref.size:
            row["why"] = f"output {i}: {got.size} elements, want {ref.size}"
            return
        got = got.reshape(ref.shape)
        g64, r64 = got.astype(np.float64), ref.astype(np.float64)
        ok &= bool(np.all(np.isfinite(g64)))
        if ref.size:
            err = max(err, float(np.max(np.abs(g64 - r64))))
            scale = max(scale, float(np.max(np.abs(r64))))
        den = np.linalg.norm(g64) * np.linalg.norm(r64)
        cos = min(cos, float(np.dot(g64.ravel(), r64.ravel()) / den) if den else 1.0)
        ok &= bool(np.allclose(got, ref, rtol=RTOL, atol=ATOL))
        t = top1(task, got, ref)
        if t is not None:
            agree.append(t)
    row.update(err=err, cos=cos, scale=scale, top1=min(agree) if agree else None, ok=ok)


def check_with_validate(m, path, a, bdir, feeds, row):
    """`kiln validate` on our inputs: its verdict and figures; top-1 by task from the
    outputs it keeps; the bundle's time from one more run of the program it built."""
    idir, vdir, jpath = bdir / "inputs", bdir / "validate", bdir / "validate.json"
    idir.mkdir()
    for k, x in feeds.items():
        np.save(idir / f"{k}.npy", x)
    args = [a.kiln, "validate", str(path), "--inputs", str(idir), "--json", str(jpath),
            "--keep", str(vdir), "--cc", a.cc, "--rtol", str(RTOL), "--atol", str(ATOL)]
    for d in m["dims"]:
        args += ["--dim", d]
    r, row["t_check"] = timed(args)
    if not jpath.exists():
        row["why"] = first_error(r.stdout + r.stderr)
        if (vdir / "cc.log").exists() and "build" in row["why"]:
            row["why"] += " " + first_error((vdir / "cc.log").read_text())
        return
    rep = json.loads(jpath.read_text())
    man = json.loads((vdir / "manifest.json").read_text())
    outs = rep.get("outputs", [])
    bad = [o for o in outs if not o.get("pass")]
    row["ok"] = bool(rep.get("pass")) and r.returncode == 0 and not bad
    row["err"] = max((o.get("max_abs") or 0.0 for o in outs), default=None)
    row["cos"] = min((o["cosine"] for o in outs if o.get("cosine") is not None), default=None)
    gots, refs = [], []
    for i, mo in enumerate(man["outputs"]):
        ref_f, got_f = vdir / mo["file"], vdir / f"out_{i}.bin"
        if ref_f.exists() and got_f.exists() and mo["dtype"] == onnx.TensorProto.FLOAT:
            refs.append(np.fromfile(ref_f, np.float32).reshape(mo["dims"]))
            gots.append(np.fromfile(got_f, np.float32))
    if gots and len(gots) == len(man["outputs"]):
        fig = {}
        compare(fig, m["task"], gots, refs)
        row["top1"], row["scale"] = fig.get("top1"), fig.get("scale")
    if bad:
        o = bad[0]
        row["why"] = (f"kiln validate: output '{o.get('name')}' "
                      + (o.get("error") or f"{o.get('out_of_tolerance')} elements out of "
                         f"tolerance, max abs {o.get('max_abs')}"))
    elif not row["ok"]:
        row["why"] = first_error(r.stdout + r.stderr)
    exe = vdir / "bundle" / "model_test"
    if exe.exists():
        run = [str(exe), str(vdir / "bundle" / "model_weights.bin")]
        run += [str(vdir / i["file"]) for i in man["inputs"]]
        run += [str(bdir / f"timing_out_{i}.bin") for i in range(len(man["outputs"]))]
        rr, t = timed(run)
        row["t_run"] = t if rr.returncode == 0 else None


def check_own(m, a, bdir, feeds, refs, row):
    """Our own comparison: the bundle of `kiln compile` and its test main, built here."""
    name = row["name"]
    exe = bdir / f"{name}_test"
    t0 = time.perf_counter()
    r = subprocess.run([a.cc, *CFLAGS, "-I", str(bdir), str(bdir / f"{name}.c"),
                        str(bdir / f"{name}_test_main.c"), "-o", str(exe), "-lm"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        row["why"] = f"{a.cc}: " + first_error(r.stderr)
        return
    run_args = [str(exe), str(bdir / f"{name}_weights.bin")]
    for i, x in enumerate(feeds.values()):
        f = bdir / f"in_{i}.bin"
        x.tofile(f)
        run_args.append(str(f))
    outs = [bdir / f"out_{i}.bin" for i in range(len(refs))]
    r, row["t_run"] = timed(run_args + [str(o) for o in outs])
    row["t_check"] = time.perf_counter() - t0
    if r.returncode != 0:
        row["why"] = f"bundle exit {r.returncode}: {r.stderr.strip()[:200]}"
        return
    compare(row, m["task"], [np.fromfile(o, dtype=ref.dtype) for o, ref in zip(outs, refs)],
            refs)
    if m["min_cosine"] is not None and row["cos"] is not None:
        # a quantized model: pass on cosine and top-1 (see models.txt)
        row["ok"] = (bool(np.isfinite(row["err"])) and row["cos"] >= m["min_cosine"]
                     and row["top1"] in (None, 1.0))
        if not row["ok"]:
            row["why"] = (f"cosine {row['cos']:.6f} (want >= {m['min_cosine']}) or top-1 "
                          f"{row['top1']} (want 100%)")


def run_model(m, path, a, work, absent=""):
    """One model: returns the row of the table (a dict). absent: why its exporter could not
    run (the model is then skipped)."""
    name = m["name"]
    row = {"name": name, "exporter": exporter_of(m), "absent": False, "compiles": False,
           "err": None, "cos": None, "top1": None,
           "scale": None, "arena": None, "lower": None, "t_compile": None, "t_check": None,
           "t_run": None, "t_ort": None, "ok": False, "why": "", "via": ""}
    if path is None:
        row["why"] = absent or "no model file (export failed?)"
        row["absent"] = bool(absent)
        return row
    bdir = work / name
    shutil.rmtree(bdir, ignore_errors=True)
    args = [a.kiln, "compile", str(path), "-o", str(bdir), "--name", name, "--test-main"]
    for d in m["dims"]:
        args += ["--dim", d]
    r, row["t_compile"] = timed(args)
    if r.returncode != 0:
        row["why"] = "kiln compile: " + first_error(r.stderr)
        return row
    row["compiles"] = True
    am = ARENA_RE.search(r.stdout)
    if am:
        row["arena"], row["lower"] = int(am.group(1)), int(am.group(2))

    model = onnx.load(str(path), load_external_data=False)
    inits = {t.name for t in model.graph.initializer}
    dims = dict(d.split("=", 1) for d in m["dims"])
    rng = np.random.default_rng(zlib.crc32(name.encode()))   # same inputs every run
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else int(dims[d.dim_param])
                 for d in tt.shape.dim]
        feeds[vi.name] = draw_input(rng, m["draw"].get(vi.name), tt.elem_type, shape)
    refs, row["t_ort"] = ort_reference(path, feeds, m)
    # kiln validate runs ONNX Runtime with its default optimizations: models that need the
    # graph as written (ort=none) keep our own comparison.
    if a.validator == "kiln" and m["ort"] == "all" and m["min_cosine"] is None:
        row["via"] = "kiln validate"
        check_with_validate(m, path, a, bdir, feeds, row)
    else:
        row["via"] = "run.py"
        check_own(m, a, bdir, feeds, refs, row)
    if not row["ok"] and not row["why"]:
        row["why"] = f"outputs differ beyond rtol {RTOL:g}, atol {ATOL:g}"
    return row


def fmt_row(r, status):
    def f(v, spec, none="-"):
        return none if v is None else format(v, spec)
    ratio = (f"{r['arena'] / r['lower']:.2f}" if r["arena"] is not None and r["lower"]
             else "-")
    return [r["name"], r["exporter"], "yes" if r["compiles"] else "no", f(r["err"], ".2e"),
            f(r["scale"], ".2g"), f(r["cos"], ".6f"), f(r["top1"], ".0%"), f(r["arena"], "d"),
            f(r["lower"], "d"), ratio, f(r["t_compile"], ".2f"), f(r["t_check"], ".1f"),
            f(None if r["t_run"] is None else r["t_run"] * 1e3, ".0f"),
            f(None if r["t_ort"] is None else r["t_ort"] * 1e3, ".1f"), status]


HEAD = ["model", "exporter", "compiles", "max abs err", "max abs ref", "cosine", "top-1", "arena B",
        "lower bound B", "arena/lb", "compile s", "check s", "bundle ms", "ORT ms", "result"]


def status_of(r, known):
    if r.get("absent"):
        return "skipped (exporter not installed)"
    if r["name"] in known:
        return "XPASS (remove from known_failures.txt)" if r["ok"] else "skipped (known)"
    return "pass" if r["ok"] else "FAIL"


def print_table(rows):
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(HEAD)]
    print("  ".join(h.ljust(w) for h, w in zip(HEAD, widths)))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))


def write_docs(path, cells, results, known, summary, a):
    cc = subprocess.run([a.cc, "--version"], capture_output=True, text=True).stdout
    via = ("`kiln validate --inputs` (models marked ort=none: run.py's own comparison)"
           if a.validator == "kiln" else "run.py's own comparison")
    lines = [
        "# Real-model suite",
        "",
        "Generated by `tests/models/run.py` (do not edit by hand; run "
        "`tests/models/run.sh build/kiln` to refresh it). Models: `tests/models/models.txt`; "
        "known failures: `tests/models/known_failures.txt`.",
        "",
        "Each model is exported with seeded random weights (batch norms given random scales "
        "and statistics measured on random inputs, batch 1) by one of four exporters (column "
        "exporter): `torchscript`, PyTorch 1.13's TorchScript exporter at opset 17 "
        "(`tests/models/export.py`); `dynamo`, PyTorch 2.x's `torch.onnx.export(..., "
        "dynamo=True)` with its defaults (the same networks, `export.py --exporter dynamo`); "
        "`tf2onnx`, Keras models (`tests/models/export_tf.py`); `paddle2onnx`, a PaddlePaddle "
        "model (`tests/models/export_paddle.py`). The last three run in venvs that "
        "`scripts/exporters install torch|tf|paddle` makes; a model whose exporter is not "
        "installed (and not in the cache) is skipped. Others are quantized by "
        "`tests/models/quantize.py` or committed in the repository. `kiln compile` must "
        "succeed; then the bundle, built with "
        f"`{a.cc} {' '.join(CFLAGS)}`, and ONNX Runtime run one seeded random input, "
        f"compared by {via}. Pass: every output element within "
        f"|kiln - ort| <= {ATOL:g} + {RTOL:g} * |ort|; models marked pass=cosine:X in "
        "models.txt (quantized ones, whose rounding-boundary flips compound) pass on "
        "cosine >= X and full top-1 agreement instead.",
        "",
        "Columns: max abs err, and the largest |output| for scale; cosine similarity; top-1: "
        "the share of argmax agreement (per pixel for segmentation, per position for the "
        "language model); arena: the bundle's planned arena against its lower bound (the "
        "most bytes live at once); times: kiln compile, the check (C build, run and "
        "comparison), one bundle run, and one ONNX Runtime run (one thread, after a warm-up).",
        "",
        "| " + " | ".join(HEAD) + " |",
        "|" + "---|" * len(HEAD),
    ]
    for c in cells:
        lines.append("| " + " | ".join(c) + " |")
    lines += ["", f"**{summary}**", ""]
    failing = [r for r in results if not r["ok"]]
    if failing:
        lines += ["## Failures, known failures and skipped models", ""]
        for r in failing:
            why = known.get(r["name"]) or r["why"]
            tag = ("skipped" if r.get("absent") else
                   "known" if r["name"] in known else "failure")
            lines.append(f"- `{r['name']}` ({tag}): {why}")
        lines.append("")
    lines += [f"Machine: {platform.machine()}, {os.cpu_count()} cores; compiler: "
              f"{cc.splitlines()[0] if cc else a.cc}; ONNX Runtime {ort.__version__}.", ""]
    pathlib.Path(path).write_text("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--work", help="bundles and logs (default: a folder in the cache)")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--docs", default=str(ROOT / "docs" / "models.md"))
    ap.add_argument("--no-docs", action="store_true")
    ap.add_argument("--models", type=pathlib.Path, default=HERE / "models.txt")
    ap.add_argument("--known", type=pathlib.Path, default=HERE / "known_failures.txt")
    ap.add_argument("--own-compare", action="store_true",
                    help="compare with run.py's own ONNX Runtime run, not kiln validate")
    ap.add_argument("--install-exporters", action="store_true",
                    help="install a missing exporter venv (scripts/exporters install NAME); "
                         "also KILN_INSTALL_EXPORTERS=1")
    ap.add_argument("filters", nargs="*")
    a = ap.parse_args()
    a.kiln = str(pathlib.Path(a.kiln).resolve())
    a.validator = "own" if a.own_compare or not has_validate(a.kiln) else "kiln"
    print(f"comparing with {'kiln validate' if a.validator == 'kiln' else 'run.py'}; "
          f"C compiler {a.cc} {' '.join(CFLAGS)}", flush=True)
    models = [m for m in read_models(a.models)
              if not a.filters or any(f in m["name"] for f in a.filters)]
    known = read_known(a.known)
    work = pathlib.Path(a.work) if a.work else cache_dir().parent / "work"
    work.mkdir(parents=True, exist_ok=True)
    install = a.install_exporters or os.environ.get("KILN_INSTALL_EXPORTERS") == "1"
    paths, absent = ensure_models(models, work, install)

    results, cells = [], []
    n_pass = n_fail = n_skip = 0
    for m in models:
        t0 = time.perf_counter()
        r = run_model(m, paths[m["name"]], a, work, absent.get(m["name"], ""))
        st = status_of(r, known)
        if st.startswith("skipped"):
            n_skip += 1
        elif r["ok"]:
            n_pass += 1
        else:
            n_fail += 1
        print(f"{m['name']}: {st} ({time.perf_counter() - t0:.1f} s)"
              + (f": {r['why']}" if r["why"] else ""), flush=True)
        results.append(r)
        cells.append(fmt_row(r, st))
    print()
    print_table(cells)
    summary = f"{n_pass} passed, {n_fail} failed, {n_skip} skipped"
    if not a.filters and not a.no_docs:
        write_docs(a.docs, cells, results, known, summary, a)
        print(f"\nwrote {a.docs}")
    print(summary)
    return 1 if n_fail else 0


if __name__ == "__main__":
    sys.exit(main())
